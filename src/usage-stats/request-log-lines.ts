/**
 * A request log line as it is stored: in a SQLite or PostgreSQL chunk (request-log-chunks.ts) and as an item of
 * a key's Redis list (redis-usage-stats.ts). A module of its own, so that the Redis writer loads no query
 * builder.
 */
import { isOutcome, type LogOutcome, type RequestLogEntry } from './usage-stats.js';

export type StoredLine = [string, string, string, number, string | null, string, number, string | null, string];

/** A line as stored: an array without the field names, a third shorter than the object and cheaper to encode. */
export const storedLineOf = (l: RequestLogEntry): StoredLine => [l.at, l.method, l.path, l.status, l.error, l.outcome, l.durationMs, l.address, l.requestId];

const isText = (v: unknown): v is string => typeof v === 'string';
const isTextOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';

/** A stored line read back; null when it is not what storedLineOf makes (a value changed by hand). */
export function lineOfStored(line: unknown): RequestLogEntry | null {
  if (!Array.isArray(line) || line.length !== 9) return null;
  const [at, method, path, status, error, outcome, durationMs, address, requestId] = line as unknown[];
  if (!isText(at) || !isText(method) || !isText(path) || typeof status !== 'number' || !isTextOrNull(error)) return null;
  if (!isText(outcome) || !(outcome === 'not_counted' || isOutcome(outcome)) || typeof durationMs !== 'number') return null;
  if (!isTextOrNull(address) || !isText(requestId)) return null;
  return { at, method, path, status, error, outcome: outcome as LogOutcome, durationMs, address, requestId };
}
