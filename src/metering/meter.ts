/**
 * The metering contract (docs/contract.md, "Metering"). One call per request admits it against the account's
 * sliding 60-second burst window and, when asked, its calendar-month quota, atomically: with K slots left
 * and N requests in flight, exactly K are admitted, whichever server they reach. A "no" is a value.
 */
import { settleBy } from '../deadline.js';
import type { PlanLimits } from '../domain/scopes.js';

export interface AdmitRequest {
  accountId: number;
  keyId: number;
  limits: PlanLimits;
  /** Count this request against the monthly quota (step 9); false for /me and for rejected requests. */
  quota: boolean;
  now: number;
  /**
   * Epoch ms (real time, whatever `now` says) by which the admission must be decided: past it the meter
   * rejects with MeterUnavailableError, and an admission its store carries out later counts nothing.
   * Without one, the store's own time limit applies.
   */
  deadline?: number;
}

export interface BurstState {
  allowed: boolean;
  /** Slots left in the window after this request. */
  remaining: number;
  /** Milliseconds until the oldest request in the window leaves it (a slot frees); 0 if the window is empty. */
  resetInMs: number;
}

export interface QuotaState {
  /** False only when the quota was asked for and the month is used up. */
  allowed: boolean;
  /** Requests counted this period, after this one. */
  used: number;
  period: string;
}

export interface Admission {
  burst: BurstState;
  /** Present whenever the burst allowed the request, whether or not it was counted. */
  quota: QuotaState | null;
}

export interface KeyDailyUsage {
  day: string;
  requests: number;
}

export interface Meter {
  admit(request: AdmitRequest): Promise<Admission>;
  /**
   * Gives back one counted request of the period (a 5xx answer). With a deadline (epoch ms, as for
   * admit) it rejects by then, and a give-back its store carries out later does nothing, so a caller may
   * try again after a rejection without giving back twice. With a token (the request's id), a give-back
   * whose store did the work but whose reply was lost is not done again when retried (PostgreSQL
   * and Redis keep the tokens; SQLite writes synchronously and loses no reply).
   */
  refund(accountId: number, keyId: number, period: string, day: string, deadline?: number, token?: string): Promise<void>;
  /** Requests counted in the account's current period, for /me and the CLI. */
  used(accountId: number, period: string): Promise<number>;
  /**
   * Requests per UTC day of one key of the account, newest first, from `sinceDay` to `untilDay` (default:
   * today). The account is asked for because the Redis meter keeps a key's counts with its account's.
   */
  keyUsage(accountId: number, keyId: number, sinceDay: string, untilDay?: string): Promise<KeyDailyUsage[]>;
  /**
   * When each of the account's keys was last used (any request past the key and plan checks); keys never
   * used are absent.
   */
  lastUsed(accountId: number, keyIds: number[]): Promise<Map<number, string>>;
  /** Requests admitted for the account in the 60 seconds up to `now` (its burst window), for the owner's overview. */
  burstUsed(accountId: number, now: number): Promise<number>;
  /** True when the meter's store answers (readiness). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * What an admission checks of the account's access, for a server that holds principals (api-pipeline.ts):
 * `held`, the access version of the principal the server holds (null: the key was read from the database
 * for this request, no check), and `known`, a version just read from the database (Redis keeps it unless a
 * higher one is there; null: none read).
 */
export interface AccessCheck {
  held: number | null;
  known: number | null;
}

/** The admission was not made: the held principal's access version is no longer the account's. */
export const STALE = 'stale' as const;

/** A meter that admits with the access check, in the same step as the admission (SQLite, Redis). */
export interface AccessCheckedMeter {
  admitChecked(request: AdmitRequest, access: AccessCheck): Promise<Admission | typeof STALE>;
}

/** No principal held, no version read: nothing to check. */
export const NO_CHECK: AccessCheck = Object.freeze({ held: null, known: null });

/** Meter.admit for an access-checked meter: the admission without the check, which cannot come back stale. */
export async function admitUnchecked(meter: AccessCheckedMeter, request: AdmitRequest): Promise<Admission> {
  const admission = await meter.admitChecked(request, NO_CHECK);
  if (admission === STALE) throw new Error('an admission without an access check came back stale');
  return admission;
}

/** The meter's store could not be reached: the request is answered 503, never served unmetered. */
export class MeterUnavailableError extends Error {
  constructor(cause: unknown) {
    super('usage metering is temporarily unavailable', { cause });
    this.name = 'MeterUnavailableError';
  }
}

/** settleBy (deadline.ts) for a meter's store: any failure, the deadline's included, is a MeterUnavailableError. */
export async function settleMeterBy<T>(deadline: number, work: Promise<T>, what: string, onLate?: (value: T) => void): Promise<T> {
  try {
    return await settleBy(deadline, work, what, onLate);
  } catch (error) {
    throw error instanceof MeterUnavailableError ? error : new MeterUnavailableError(error);
  }
}
