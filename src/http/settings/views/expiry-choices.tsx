/**
 * The expiry fieldset of the create and roll forms: 7, 30, 90 days, 1 year, a date of the owner's choice
 * (the end of that day, UTC, at most a year away), or never, with the warning. The roll form adds a first
 * choice, the old key's lifetime. The checked choice decides: the date is read only with "On a date"
 * (typing one checks it when script runs, data-choose). Posts `expiry` and `expiryDate`.
 */
import type { ComponentChildren } from 'preact';
import { EXPIRY_CHOICES, expiryDateRange, NEVER_EXPIRES_WARNING, type ExpiryChoice } from '../../../services/key-expiry.js';
import { FieldError, Time } from './components.js';

/** The choice of the date field; and of the roll form's "as the old key". */
export const EXPIRY_ON_DATE = 'date';
export const EXPIRY_SAME = 'same';

const LABELS: Record<ExpiryChoice, string> = {
  '7d': '7 days',
  '30d': '30 days',
  '90d': '90 days',
  '1y': '1 year',
  never: 'Never (not recommended)',
};

export interface ExpiryValues {
  /** One of EXPIRY_CHOICES, EXPIRY_ON_DATE or (roll) EXPIRY_SAME. */
  expiry: string;
  /** The date field as typed (YYYY-MM-DD from a date picker). */
  expiryDate: string;
}

export function ExpiryChoices({
  now,
  values,
  error,
  same,
}: {
  now: number;
  values: ExpiryValues;
  error: string | null | undefined;
  /** Roll: the expiry the old key's lifetime gives the new key (null: never). */
  same?: { expiresAt: string | null };
}) {
  const { first, last } = expiryDateRange(now);
  const radio = (value: string, label: ComponentChildren) => (
    <div class="choice">
      <input type="radio" id={`expiry-${value}`} name="expiry" value={value} checked={values.expiry === value} />
      <label for={`expiry-${value}`}>{label}</label>
    </div>
  );
  return (
    <fieldset aria-describedby={error ? 'expiry-hint expiry-error' : 'expiry-hint'}>
      <legend>Expires</legend>
      {same === undefined
        ? null
        : radio(
            EXPIRY_SAME,
            same.expiresAt === null ? (
              'As the old key: never'
            ) : (
              <>
                As the old key, the same lifetime from now: <Time at={same.expiresAt} now={now} exact />
              </>
            ),
          )}
      {EXPIRY_CHOICES.filter((c) => c !== 'never').map((choice) => radio(choice, `After ${LABELS[choice]}`))}
      <div class="choice">
        <input type="radio" id="expiry-date-choice" name="expiry" value={EXPIRY_ON_DATE} checked={values.expiry === EXPIRY_ON_DATE} />
        <label for="expiry-date-choice">On a date of your choice</label>
        <div class="choice-detail">
          <label for="expiry-date">Date</label>
          <p class="hint" id="expiry-date-hint">
            The key stops at the end of that day, 23:59 UTC: today ({first}) to {last}.
          </p>
          <input
            type="date"
            id="expiry-date"
            name="expiryDate"
            value={values.expiryDate}
            min={first}
            max={last}
            placeholder="YYYY-MM-DD"
            data-choose="expiry-date-choice"
            aria-describedby="expiry-date-hint"
            aria-invalid={error && values.expiry === EXPIRY_ON_DATE ? 'true' : undefined}
          />
        </div>
      </div>
      {radio('never', LABELS.never)}
      <p class="hint" id="expiry-hint">
        {NEVER_EXPIRES_WARNING} A date is at most a year away.
      </p>
      <FieldError id="expiry-error" message={error} />
    </fieldset>
  );
}
