/**
 * What a secret scanning report must be, checked before anything is looked up: GitHub's documented body,
 * a JSON array of `{ token, type, url, source }` (all strings). Anything else is refused whole (400), so a
 * half-understood report never revokes part of what it names.
 */
import type { LeakReport } from '../../services/leaked-keys.service.js';

export interface ReportedToken extends LeakReport {
  /** GitHub's name for the kind of secret, echoed in the answer as token_type. */
  type: string;
}

/** The report's tokens in order, or the reason the body is not a report (a message naming no token). */
export function parseReport(body: Buffer): { tokens: ReportedToken[] } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    return { problem: 'The report is not JSON (UTF-8).' };
  }
  if (!Array.isArray(parsed)) return { problem: 'The report must be a JSON array of { token, type, url, source }.' };
  const tokens: ReportedToken[] = [];
  for (const [i, item] of (parsed as unknown[]).entries()) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return { problem: `Item ${i} of the report is not an object.` };
    const { token, type, url, source } = item as Record<string, unknown>;
    if (typeof token !== 'string' || token === '') return { problem: `Item ${i} of the report has no token (a non-empty string).` };
    if (typeof type !== 'string') return { problem: `Item ${i} of the report has no type (a string).` };
    // GitHub always sends both; a reporter that leaves them out (null) still says which token it found.
    if (url !== undefined && url !== null && typeof url !== 'string') return { problem: `Item ${i} of the report: url must be a string.` };
    if (source !== undefined && source !== null && typeof source !== 'string') return { problem: `Item ${i} of the report: source must be a string.` };
    tokens.push({
      token,
      type,
      url: typeof url === 'string' && url !== '' ? url : null,
      source: `GitHub secret scanning${typeof source === 'string' && source !== '' ? ` (${source})` : ''}`,
    });
  }
  return { tokens };
}
