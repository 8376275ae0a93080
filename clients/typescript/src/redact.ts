/**
 * Keeps the client's own API key out of every text it produces (errors' messages and fields, `onRetry`
 * events): a server or proxy that echoes the request back (a debugging page, a careless error handler)
 * must not put the key into a log, a stack trace or a bug report.
 */

/** What the key is replaced with. */
export const REDACTED = '[redacted API key]';
/**
 * A key is `<prefix>_live_<secret><checksum>`; the prefix is fixed and the checksum recomputable, so the
 * part after `live_` alone is as good as the key (a proxy might echo only that).
 */
const SECRET_MARK = '_live_';
/** Shorter fragments are not worth hiding (and would blank ordinary words of a message). */
const MIN_SECRET = 20;

export type Redact = (text: string) => string;

export function redactor(apiKey: string): Redact {
  const secrets = [apiKey];
  const mark = apiKey.indexOf(SECRET_MARK);
  if (mark >= 0 && apiKey.length - mark - SECRET_MARK.length >= MIN_SECRET) secrets.push(apiKey.slice(mark + SECRET_MARK.length));
  // Longest first: the whole key is replaced before its tail could be found inside it.
  const ordered = [...new Set(secrets.filter((s) => s.trim() !== ''))].sort((a, b) => b.length - a.length);
  return (text) => ordered.reduce((result, secret) => result.split(secret).join(REDACTED), text);
}

export const noRedaction: Redact = (text) => text;
