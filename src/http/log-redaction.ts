/** What the app's log lines never show, whichever surface wrote them: keys, sign-in tokens, cookies. */
import { redactSecrets } from '../keys/api-key.js';

/** With the keys' own rules in src/keys, so that the owners' request log (src/metering) uses the very same. */
export { redactSecrets };

/** The request headers a key or a session travels in; whatever logs a request's headers never shows them. */
export const REDACTED_HEADER_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
];
