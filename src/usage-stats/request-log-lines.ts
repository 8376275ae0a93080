/**
 * A request log line as it is stored: in a SQLite or PostgreSQL chunk (request-log-chunks.ts) and as an item of
 * a key's Redis list (redis-usage-stats.ts, read back by logLineOfItem). A module of its own, so that the
 * Redis writer loads no query builder.
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

/**
 * A request log item read back: an array (storedLineOf), or an object as written before 2026-11-28 (the
 * same fields by name); null for anything else (a value changed by hand), which is left out.
 */
export function logLineOfItem(item: string): RequestLogEntry | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(item);
  } catch {
    return null;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const o = parsed as Record<string, unknown>;
    parsed = [o.at, o.method, o.path, o.status, o.error, o.outcome, o.durationMs, o.address, o.requestId];
  }
  return lineOfStored(parsed);
}
