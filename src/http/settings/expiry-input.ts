/**
 * The expiry fieldset of the create and roll forms as posted (`expiry`, `expiryDate`), and what it asks of
 * the keys service: the checked choice decides, and the date is read only with "On a date".
 */
import type { ExpiryAsk } from '../../services/key-expiry.js';
import { textField, type FormBody } from './form-input.js';
import { EXPIRY_ON_DATE, EXPIRY_SAME, type ExpiryValues } from './views/expiry-choices.js';

export function expiryValues(body: FormBody): ExpiryValues {
  return { expiry: textField(body, 'expiry'), expiryDate: textField(body, 'expiryDate') };
}

/**
 * The expiry to ask createKey or rollKey for: `{ date }` for "On a date", the choice itself otherwise (the
 * service refuses one it does not know). "same" (roll only): undefined, the old key's lifetime.
 */
export function expiryAsk(values: ExpiryValues, form: 'create' | 'roll'): ExpiryAsk {
  if (values.expiry === EXPIRY_ON_DATE) return { date: values.expiryDate };
  if (form === 'roll' && values.expiry === EXPIRY_SAME) return undefined;
  return values.expiry;
}
