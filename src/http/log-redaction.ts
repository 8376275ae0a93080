/** What the app's log lines never show, whichever surface wrote them: keys, sign-in tokens, cookies. */
import { redactKeys } from '../keys/api-key.js';

/** The request headers a key or a session travels in; whatever logs a request's headers never shows them. */
export const REDACTED_HEADER_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
];

/** A line with every key and every sign-in link's token (a credential until used) cut out. */
export function redactSecrets(text: string): string {
  return redactKeys(text).replace(/([?&]token=)[^&"\s]*/g, '$1[redacted]');
}
