/**
 * When a key stops working: the lifetimes a new key may be given (a choice, a date or a date-time, at most a
 * year away), and when a rolled key's predecessor stops. The one rule for the create and roll forms and for
 * `keys create` and `keys roll`.
 */
import { canonicalTimestamp } from '../domain/timestamps.js';
import { InputError } from '../errors/input-error.js';
import type { KeyRecord } from '../store/repositories/api-key.repository.js';

/** The lifetimes the create form offers, and "never". Anything else is a date or a date-time (expiresAtFor). */
export const EXPIRY_CHOICES = ['7d', '30d', '90d', '1y', 'never'] as const;
export type ExpiryChoice = (typeof EXPIRY_CHOICES)[number];
/** A new key's lifetime when none is asked for, on the screen and the command line alike. */
export const DEFAULT_EXPIRY: ExpiryChoice = '90d';
const EXPIRY_DAYS: Record<Exclude<ExpiryChoice, 'never'>, number> = { '7d': 7, '30d': 30, '90d': 90, '1y': 365 };
/** Said wherever a key that never expires is offered or made (the create form, `keys create`). */
export const NEVER_EXPIRES_WARNING = '"Never" is convenient but risky: a key that leaks keeps working until someone revokes it.';

export function isExpiryChoice(value: string): value is ExpiryChoice {
  return (EXPIRY_CHOICES as readonly string[]).includes(value);
}

/**
 * What an expiry may be asked as: a string as `--expires-at` takes it (undefined: DEFAULT_EXPIRY), or
 * `{ date }`, the settings screen's date field, which holds a plain date only.
 */
export type ExpiryAsk = string | undefined | { date: string };

const PLAIN_DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;
const DAY_MS = 86_400_000;

/** The last millisecond of a calendar date `YYYY-MM-DD`, in UTC; null for a date that does not exist (2027-02-30). */
function endOfDayUtc(date: string): string | null {
  const match = PLAIN_DATE.exec(date);
  if (match === null) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const start = new Date(Date.UTC(year, month - 1, day));
  if (start.getUTCFullYear() !== year || start.getUTCMonth() !== month - 1 || start.getUTCDate() !== day) return null;
  return new Date(start.getTime() + DAY_MS - 1).toISOString();
}

/**
 * The dates an expiry may fall on, as `YYYY-MM-DD` (UTC): from today to the same date a year on (29 February
 * goes to 28 February). A date means the end of that day, so the latest expiry is the end of `last`; "1y"
 * (365 days from now) always falls within it.
 */
export function expiryDateRange(now: number): { first: string; last: string } {
  const today = new Date(now);
  const year = today.getUTCFullYear() + 1;
  const month = today.getUTCMonth();
  // Date.UTC rolls 29 February of a year without one over to 1 March: step back to the month's last day.
  const sameDay = new Date(Date.UTC(year, month, today.getUTCDate()));
  const last = sameDay.getUTCMonth() === month ? sameDay : new Date(Date.UTC(year, month + 1, 0));
  return { first: today.toISOString().slice(0, 10), last: last.toISOString().slice(0, 10) };
}

/** An expiry `at` must lie in the future and at most a year away (the end of expiryDateRange's last day). */
function requireExpiryWindow(at: string, now: number): string {
  if (Date.parse(at) <= now) throw new InputError('The expiry must be in the future.', 'expiry');
  const { last } = expiryDateRange(now);
  if (Date.parse(at) > Date.parse(endOfDayUtc(last) ?? '')) {
    throw new InputError(`The expiry must be at most a year away: ${last} at the latest (or a key that never expires).`, 'expiry');
  }
  return at;
}

/**
 * The one expiry rule of a new key, for the create and roll forms and `keys create`: nothing (undefined or
 * '') is DEFAULT_EXPIRY (90 days); 7d, 30d, 90d, 1y count from `now`; "never" is null; a plain date
 * (2027-01-31) is the end of that day, UTC (23:59:59.999Z); an ISO 8601 date-time is taken as given. A date
 * or date-time must be in the future and at most a year away (expiryDateRange). `{ date }` (the screen's
 * date field) must be a plain date.
 */
export function expiresAtFor(input: ExpiryAsk, now: number): string | null {
  if (typeof input === 'object') {
    const date = input.date.trim();
    if (date === '') throw new InputError('Choose the date the key expires on.', 'expiry');
    const at = endOfDayUtc(date);
    if (at === null) {
      const shown = JSON.stringify(date.length > 40 ? `${date.slice(0, 40)}…` : date);
      throw new InputError(`Give the date as year-month-day, such as 2027-01-31 (a date that exists); got ${shown}.`, 'expiry');
    }
    return requireExpiryWindow(at, now);
  }
  const asked = input === undefined || input.trim() === '' ? DEFAULT_EXPIRY : input.trim();
  if (asked === 'never') return null;
  const days = Object.hasOwn(EXPIRY_DAYS, asked) ? EXPIRY_DAYS[asked as keyof typeof EXPIRY_DAYS] : undefined;
  const at = days !== undefined
    ? new Date(now + days * DAY_MS).toISOString()
    : PLAIN_DATE.test(asked)
      ? endOfDayUtc(asked)
      : canonicalTimestamp(asked);
  if (at === null) {
    throw new InputError(
      `Expiry must be one of ${EXPIRY_CHOICES.join(', ')}, a date (2027-01-31: the end of that day, UTC) or an ISO 8601 date-time such as 2027-01-01T00:00:00Z, at most a year away; got ${JSON.stringify(asked)}.`,
      'expiry',
    );
  }
  return requireExpiryWindow(at, now);
}

export const STOP_OLD_CHOICES = ['now', '1h', '24h', '7d'] as const;
export type StopOld = (typeof STOP_OLD_CHOICES)[number];
export const STOP_OLD_MS: Record<StopOld, number> = { now: 0, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };

export function isStopOld(value: string): value is StopOld {
  return (STOP_OLD_CHOICES as readonly string[]).includes(value);
}

/** The expiry of a key rolled from `old` at `now` that lives as long as `old` was made to; null: never. */
export function sameLifetime(old: Pick<KeyRecord, 'createdAt' | 'expiresAt'>, now: number): string | null {
  return old.expiresAt === null ? null : new Date(now + (Date.parse(old.expiresAt) - Date.parse(old.createdAt))).toISOString();
}
