/**
 * Tells a store that cannot be reached (answer 503, retry shortly) from a bug (answer 500), for both
 * surfaces: the Data API's error body and the settings screen's page say the same thing in their own way.
 */
import { DeadlineExceededError } from '../deadline.js';
import { MeterUnavailableError } from '../metering/meter.js';
import { StoreBusyError } from '../store/scan-limiter.js';

/** The Retry-After (seconds) of every 503 for an unreachable or stalled store. */
export const RETRY_AFTER_UNAVAILABLE_S = 1;

const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY|NOTADB|CORRUPT|PROTOCOL)/;
const NODE_NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export function isStoreUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (SQLITE_UNAVAILABLE.test(code) || NODE_NETWORK.has(code)) return true;
    // PostgreSQL: connection exceptions (08), insufficient resources (53), operator intervention (57).
    if (/^(08|53|57)[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (error.name === 'TypeError' && /database connection is not open/i.test(error.message)) return true;
  // pg's, then ioredis' (its command time limit, a connection closed, retries given up) as they word them.
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|^Command timed out$|^Connection is closed\.?$|max retries per request/i.test(
    error.message,
  );
}

/** An outage the service expects (a store down, stalled past the request's deadline, or too busy): a 503. */
export function isOutage(error: unknown): boolean {
  return (
    error instanceof MeterUnavailableError ||
    error instanceof StoreBusyError ||
    error instanceof DeadlineExceededError ||
    isStoreUnavailable(error)
  );
}

/**
 * An outage (isOutage) that a store caused: its error, a connection refused or reset, a store not reachable.
 * False when only a deadline passed while the stores still answer (a loaded host, a slow query, a lock
 * another writer held until the deadline, a store that found the deadline passed and did nothing): the request
 * is refused, but that says nothing of the requests behind it (key-gate.ts).
 */
export function isStoreDown(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    if (current instanceof DeadlineExceededError || current instanceof StoreBusyError) return false;
    const code = (current as { code?: unknown }).code;
    // 57014 (query_canceled): the meter's own deadline check, or a statement's time limit. SQLite's BUSY
    // and LOCKED: another writer held the file until the deadline.
    if (code === '57014' || (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code))) return false;
    if (!(current instanceof MeterUnavailableError)) return true;
    current = current.cause;
  }
  return true;
}
