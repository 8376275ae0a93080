/**
 * A key's allowed addresses on the screen: the list, the form that changes it on key details, and the field
 * the create form shares with it (with the owner's own address in its hint, and the lock-out warning).
 */
import { MAX_ALLOWED_ADDRESSES } from '../../../domain/address-list.js';
import { paths } from '../paths.js';
import { Banner, FieldError, FormToken, KeyChangeActions } from './components.js';

/** The field as typed, refused (error) or waiting for "Save anyway" (warning). */
export interface AddressesFormState {
  value: string;
  error?: string;
  warning?: string;
}

export function AddressList({ addresses }: { addresses: readonly string[] }) {
  return (
    <ul class="plain mono">
      {addresses.map((a) => (
        <li>{a}</li>
      ))}
    </ul>
  );
}

/**
 * The key's allowed addresses, one per line. A list that leaves out the owner's own address comes back
 * with a warning and a "Save anyway" button (the same form, field `lockout=accept`) instead of being saved.
 */
export function AllowedAddressesForm({
  keyId,
  formToken,
  current,
  clientAddress,
  form,
  idPrefix = 'addresses',
  action = paths.keyAddresses(keyId),
}: {
  keyId: number;
  formToken: string;
  current: readonly string[];
  clientAddress: string;
  form: AddressesFormState | undefined;
  idPrefix?: string;
  action?: string;
}) {
  const warning = form?.warning;
  const error = form?.error;
  const described = [`${idPrefix}-hint`, error ? `${idPrefix}-error` : null, warning ? `${idPrefix}-warning` : null].filter((x) => x !== null).join(' ');
  return (
    <form method="post" action={action} class="stack">
      <FormToken token={formToken} />
      <AddressesField idPrefix={idPrefix} value={form?.value ?? current.join('\n')} clientAddress={clientAddress} error={error} warning={warning} described={described} />
      <KeyChangeActions>
        {warning ? (
          <>
            <button type="submit" name="lockout" value="accept" class="button-danger">
              Save anyway
            </button>
            <a href={paths.key(keyId)}>Cancel</a>
          </>
        ) : (
          <button type="submit" class="button-secondary">
            Save addresses
          </button>
        )}
      </KeyChangeActions>
    </form>
  );
}

/** The text area of allowed addresses, its hint (with the owner's own address), and its error or warning. */
export function AddressesField({
  idPrefix,
  value,
  clientAddress,
  error,
  warning,
  described,
}: {
  idPrefix: string;
  value: string;
  clientAddress: string;
  error: string | undefined;
  warning: string | undefined;
  described: string;
}) {
  return (
    <div>
      <label for={idPrefix}>Allowed addresses</label>
      <p class="hint" id={`${idPrefix}-hint`}>
        IPv4 or IPv6 addresses or CIDR ranges (203.0.113.7, 10.0.0.0/8, 2001:db8::/32), one a line or separated by commas, at most{' '}
        {MAX_ALLOWED_ADDRESSES}. Empty: any address. From any other address the key is refused (401). You are connecting from{' '}
        <span class="mono">{clientAddress}</span>.
      </p>
      {warning ? (
        <Banner tone="warning">
          <p id={`${idPrefix}-warning`}>{warning}</p>
        </Banner>
      ) : null}
      <textarea id={idPrefix} name="addresses" rows={4} spellcheck={false} autocomplete="off" aria-describedby={described} aria-invalid={error ? 'true' : undefined}>
        {value}
      </textarea>
      <FieldError id={`${idPrefix}-error`} message={error} />
    </div>
  );
}
