/**
 * API key format (docs/contract.md, "Keys"): `<prefix>_live_<secret><checksum>`. The secret is 43 base62
 * characters (256 bits from the CSPRNG); the checksum is CRC-32 of everything before it in 6 base62 digits,
 * so a mistyped or invented key is refused before any store lookup and secret scanners can recognise one.
 */
import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { CHECKSUM_LENGTH, isBase62, isPlainOfSecrets, readable, SECRET_LENGTH, secretStarts } from './secret-scan.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A whole number below 2^53 in base62, most significant digit first, zero-padded to `width`. */
function toBase62(value: number, width: number): string {
  let out = '';
  let v = value;
  while (v > 0) {
    out = ALPHABET[v % 62] + out;
    v = Math.floor(v / 62);
  }
  return out.padStart(width, '0');
}

export function checksum(body: string): string {
  return toBase62(crc32(body) >>> 0, CHECKSUM_LENGTH);
}

/** A fresh key: shown once to its owner; only hashKey(key) and lastFour(key) are ever stored. */
export function generateKey(prefix: string): string {
  // Rejection sampling keeps every base62 digit uniform (256 = 4*62 + 8).
  let secret = '';
  while (secret.length < SECRET_LENGTH) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && secret.length < SECRET_LENGTH) secret += ALPHABET[byte % 62];
    }
  }
  const body = `${prefix}_live_${secret}`;
  return body + checksum(body);
}

/** True when the key has this service's form and its checksum holds: a cheap filter before any lookup. */
export function isWellFormedKey(key: string, prefix: string): boolean {
  const head = `${prefix}_live_`;
  if (key.length !== head.length + SECRET_LENGTH + CHECKSUM_LENGTH || !key.startsWith(head)) return false;
  for (let i = head.length; i < key.length; i++) {
    const c = key.charCodeAt(i);
    const ok = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (!ok) return false;
  }
  const body = key.slice(0, -CHECKSUM_LENGTH);
  return checksum(body) === key.slice(-CHECKSUM_LENGTH);
}

export function hashKey(key: string): string {
  // One call, no Hash object: every request hashes its key, and this is 2-3x cheaper than createHash.
  return hash('sha256', key, 'hex');
}

export function lastFour(key: string): string {
  return key.slice(-4);
}

/**
 * Matches anything shaped like a key of any prefix, or with its prefix left off (`live_<secret>`: a key cut
 * or pasted without its first word is still a key), to scrub keys out of logged text.
 */
export const KEY_PATTERN = /(?:[a-z][a-z0-9]{1,15}_)?live_[0-9A-Za-z]{20,}/g;

/**
 * The text with every key in it replaced by `[redacted]`: a whole key, one without its prefix
 * (`live_<secret>`), or its secret alone, with its checksum (the prefix is fixed, so the secret is the
 * key: src/keys/secret-scan.ts); however it is percent-encoded (once or again), and even split by control
 * characters (raw, percent-escaped or JSON-escaped). Only what is redacted changes; text holding no key
 * comes back unchanged, and most texts are passed over in one look without allocating (isPlainOfSecrets).
 */
export function redactKeys(text: string): string {
  if (isPlainOfSecrets(text)) return text;
  const read = readable(text);
  const spans = keySpans(read.text);
  for (const start of secretStarts(read.text)) spans.push([start, start + SECRET_LENGTH + CHECKSUM_LENGTH]);
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let copied = 0;
  for (const [from, to] of spans) {
    const start = read.starts === null ? from : read.starts[from]!;
    const end = read.ends === null ? to : read.ends[to - 1]!;
    // Overlapping finds (a whole key, and its secret inside it): the first one's [redacted] covers both.
    if (end <= copied) continue;
    out += start >= copied ? `${text.slice(copied, start)}[redacted]` : '';
    copied = Math.max(copied, end);
  }
  return out + text.slice(copied);
}

const isLower = (c: number) => c >= 97 && c <= 122;
const isLowerOrDigit = (c: number) => isLower(c) || (c >= 48 && c <= 57);

/**
 * Where KEY_PATTERN matches in the text, found from each `live_` without a regular expression: the pattern's
 * optional prefix makes a regular expression try up to 16 characters at every place of a text, and a 16 KB
 * URL is 16,000 places.
 */
function keySpans(text: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  let end = 0;
  for (let at = text.indexOf('live_'); at !== -1; at = text.indexOf('live_', Math.max(at + 1, end))) {
    let stop = at + 'live_'.length;
    while (stop < text.length && isBase62(text.charCodeAt(stop))) stop++;
    if (stop - at - 'live_'.length < 20) continue;
    spans.push([prefixStart(text, at, end), stop]);
    end = stop;
  }
  return spans;
}

/** Where KEY_PATTERN's leftmost match starts when its `live_` is at `at`: at its prefix (`[a-z][a-z0-9]{1,15}_`) if one is there. */
function prefixStart(text: string, at: number, floor: number): number {
  if (at - 3 < floor || text.charCodeAt(at - 1) !== 95) return at;
  let start = at - 1;
  while (start > Math.max(floor, at - 17) && isLowerOrDigit(text.charCodeAt(start - 1))) start--;
  while (start < at - 3 && !isLower(text.charCodeAt(start))) start++;
  return start <= at - 3 && isLower(text.charCodeAt(start)) ? start : at;
}

/**
 * A line with every key and every sign-in link's token (a credential until used) cut out: what the app's
 * log lines and the owners' request log show of a URL (src/http/log-redaction.ts).
 */
export function redactSecrets(text: string): string {
  return redactKeys(text).replace(/([?&]token=)[^&"\s]*/g, '$1[redacted]');
}

/** How a key is named to people once only its last four characters are kept: `shelf_live_…abcd`. */
export function keyHint(keyPrefix: string, lastFour: string): string {
  return `${keyPrefix}_live_…${lastFour}`;
}
