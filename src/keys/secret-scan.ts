/**
 * Finding a key's secret in a text that is echoed, logged or stored (api-key.ts, redactKeys), even without
 * its `<prefix>_live_`: the prefix is fixed and the checksum can be recomputed, so the secret alone is the
 * key. A secret is told from other text by its length (43 base62 characters, then a 6-digit base62 CRC-32
 * checksum) and confirmed by that checksum, one chance in 2^32 of a false match; the checksum is computed
 * rolling along a run of base62 characters, so a long run costs a few operations a character, not a
 * CRC-32 of 43 bytes a position.
 *
 * The text is read as a reader could rebuild a key from it: percent-escapes (escaped again or not) of a
 * key's characters decoded, and control characters taken out, whether raw, percent-escaped or escaped as
 * JSON escapes them (a log line quoting a message that quotes a value), so a secret split by `%0A` is found.
 */
import { crc32 } from 'node:zlib';

export const SECRET_LENGTH = 43; // 62^43 > 2^256
export const CHECKSUM_LENGTH = 6; // 62^6 > 2^32
const SECRET_AND_CHECKSUM = SECRET_LENGTH + CHECKSUM_LENGTH;

export const isBase62 = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isKeyCharacter = (c: number) => isBase62(c) || c === 95; // `_`
/** C0 controls, DEL and C1 controls: what the API refuses in text, and what a reader skips to rejoin a split secret. */
const isControl = (c: number) => c < 32 || (c >= 127 && c <= 159);
const base62Digit = (c: number) => (c <= 57 ? c - 48 : c <= 90 ? c - 55 : c - 61);

/**
 * CRC-32 (IEEE, as zlib's crc32) of one byte, without zlib's inversions: the register is linear in its input.
 * Registers are kept as int32 (`^`, not `>>> 0`): V8 keeps those unboxed.
 */
const TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  TABLE[n] = c;
}
const step = (register: number, byte: number) => TABLE[(register ^ byte) & 0xff]! ^ (register >>> 8);
const afterZeros = (register: number, count: number) => {
  let r = register;
  for (let i = 0; i < count; i++) r = step(r, 0);
  return r;
};
/** What a byte leaving the window contributed to the register once the SECRET_LENGTH bytes of the window that follows it were read. */
const LEAVING = new Int32Array(256);
for (let b = 0; b < 256; b++) LEAVING[b] = afterZeros(step(0, b), SECRET_LENGTH);
/** 62^5: a checksum's first digit is its CRC-32 divided by this (0 to 4, as 2^32 < 5 * 62^5). */
const FIRST_DIGIT = 62 ** 5;

/**
 * Per prefix: crc32(`<prefix>_live_` + secret) = head XOR (the register of the secret alone, from 0), since
 * the register after the prefix only shifts through the secret's 43 bytes (CRC-32 is linear).
 */
const prefixes = new Set<string>();
let heads: number[] = [];

/** Makes this process recognise the secrets of keys with this prefix (config.keyPrefix); the contract's default from the start. */
export function recogniseSecretsOf(prefix: string): void {
  if (prefixes.has(prefix)) return;
  prefixes.add(prefix);
  heads = [...heads, ~afterZeros(~crc32(`${prefix}_live_`), SECRET_LENGTH)];
}
recogniseSecretsOf('shelf');

/** Whether the 6 characters at `at` are the checksum `crc` (an unsigned CRC-32) in base62. */
function isChecksum(text: string, at: number, crc: number): boolean {
  let written = 0;
  for (let i = at; i < at + CHECKSUM_LENGTH; i++) written = written * 62 + base62Digit(text.charCodeAt(i));
  return written === crc;
}

/** Starts (in `text`) of every secret with its checksum in a run of base62 characters `text[from, to)`. */
function secretsInRun(text: string, from: number, to: number, found: number[]): void {
  let register = 0;
  for (let i = from; i < from + SECRET_LENGTH; i++) register = step(register, text.charCodeAt(i));
  for (let start = from; ; start++) {
    const checksumAt = start + SECRET_LENGTH;
    // Most windows end at the first digit of their checksum, which takes a division.
    const first = base62Digit(text.charCodeAt(checksumAt));
    if (first <= 4) {
      for (let h = 0; h < heads.length; h++) {
        const crc = (heads[h]! ^ register) >>> 0;
        if (Math.floor(crc / FIRST_DIGIT) === first && isChecksum(text, checksumAt, crc)) {
          found.push(start);
          break;
        }
      }
    }
    if (start + SECRET_AND_CHECKSUM >= to) return;
    register = step(register, text.charCodeAt(checksumAt)) ^ LEAVING[text.charCodeAt(start)]!;
  }
}

/** Starts of every secret (43 characters and their checksum) in a text of plain characters. */
export function secretStarts(text: string): number[] {
  const found: number[] = [];
  let run = 0;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && isBase62(text.charCodeAt(i))) {
      run++;
      continue;
    }
    if (run >= SECRET_AND_CHECKSUM) secretsInRun(text, i - run, i, found);
    run = 0;
  }
  return found;
}

/** The shortest thing redacted: `live_` and 20 characters (KEY_PATTERN); a secret and its checksum are longer. */
const SHORTEST_REDACTED = 25;

const hexValue = (c: number) => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);
const hexAt = (text: string, i: number) => {
  const high = hexValue(text.charCodeAt(i));
  const low = hexValue(text.charCodeAt(i + 1));
  return high < 0 || low < 0 ? -1 : high * 16 + low;
};

/** The length of the text read by the last readAt: read where it is set, to spare an object a character. */
let readLength = 1;

/**
 * The percent-escape at `at`, escaped again any number of times (`%0A`, `%250A`), as a reader of a log
 * decodes it: its byte (its length in readLength), or -1.
 */
function escapeAt(text: string, at: number): number {
  let i = at + 1;
  // `%25` then two hex digits is `%` escaped again (`%2541` reads `%41`, so `A`); `%25` alone is `%`.
  while (text.charCodeAt(i) === 50 && text.charCodeAt(i + 1) === 53 && hexAt(text, i + 2) >= 0) i += 2;
  const byte = hexAt(text, i);
  readLength = i + 2 - at;
  return byte;
}

/** `\n`, `\\n`, `\u000a`...: the length of a control character as JSON writes it (however many times the text was JSON-encoded), or 0. */
function jsonControlAt(text: string, at: number): number {
  let i = at;
  while (text.charCodeAt(i) === 92) i++;
  const c = text.charCodeAt(i);
  if (c === 110 || c === 114 || c === 116 || c === 98 || c === 102) return i + 1 - at; // n r t b f
  if (c !== 117 || text.charCodeAt(i + 1) !== 48 || text.charCodeAt(i + 2) !== 48) return 0; // u00
  const code = hexAt(text, i + 3);
  return code >= 0 && isControl(code) ? i + 5 - at : 0;
}

/**
 * The character the text reads as at `i`, or -1 for nothing (a control character, however written); its
 * length in the text is left in readLength. A percent-escape of anything but a key's character or a control
 * reads as a space: it ends a key as the character would.
 */
function readAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  readLength = 1;
  if (c === 37) {
    const byte = escapeAt(text, i);
    if (byte < 0) {
      readLength = 1;
      return c;
    }
    if (isKeyCharacter(byte)) return byte;
    // UTF-8's C1 controls (`%C2%85`, NEL) are controls too.
    if (byte === 0xc2 && text.charCodeAt(i + readLength) === 37) {
      const first = readLength;
      const next = escapeAt(text, i + first);
      if (next >= 0x80 && next <= 0x9f) {
        readLength += first;
        return -1;
      }
      readLength = first;
    }
    return isControl(byte) ? -1 : 32;
  }
  if (c === 92) {
    const length = jsonControlAt(text, i);
    if (length > 0) {
      readLength = length;
      return -1;
    }
    return c;
  }
  return isControl(c) ? -1 : c;
}

/**
 * Characters a key's characters can be read from: a key's own, `%` (hex digits are a key's), `\` (JSON's
 * escapes are letters and digits after it), and controls. A run that reads as 25 key characters is at least
 * 25 of these in a row.
 */
const MAY_READ_AS_KEY = new Uint8Array(160);
for (let c = 0; c < 160; c++) MAY_READ_AS_KEY[c] = isKeyCharacter(c) || c === 37 || c === 92 || isControl(c) ? 1 : 0;
const mayReadAsKey = (c: number) => c < 160 && MAY_READ_AS_KEY[c] === 1;

/**
 * Whether the text has SHORTEST_REDACTED characters in a row that may read as a key's. Looks at one
 * character in 25 where none does (a JSON log line, mostly), so a log line costs a few dozen reads.
 */
function hasLongRun(text: string): boolean {
  let i = SHORTEST_REDACTED - 1;
  while (i < text.length) {
    // No run of 25 starting in the 25 characters up to a character that breaks it.
    if (!mayReadAsKey(text.charCodeAt(i))) {
      i += SHORTEST_REDACTED;
      continue;
    }
    let start = i;
    while (start > 0 && mayReadAsKey(text.charCodeAt(start - 1))) start--;
    let end = i + 1;
    while (end < text.length && mayReadAsKey(text.charCodeAt(end))) end++;
    if (end - start >= SHORTEST_REDACTED) return true;
    i = end + SHORTEST_REDACTED;
  }
  return false;
}

/**
 * True when the text, read as a reader could (see the top of this file), holds no run of a key's characters
 * long enough to be redacted: most texts, a log line for one, looked at without allocating.
 */
export function isPlainOfSecrets(text: string): boolean {
  if (!hasLongRun(text)) return true;
  let run = 0;
  for (let i = 0; i < text.length; ) {
    let c = text.charCodeAt(i);
    if (c === 37 || c === 92 || isControl(c)) {
      c = readAt(text, i);
      i += readLength;
      if (c === -1) continue;
    } else {
      i++;
    }
    if (!isKeyCharacter(c)) run = 0;
    else if (++run >= SHORTEST_REDACTED) return false;
  }
  return true;
}

/** The text as a reader could rebuild a key from it, and, for each of its characters, where it came from. */
export interface ReadableText {
  text: string;
  /** Where each character of `text` starts in the original text, and where it ends; null: the text reads as written. */
  starts: Int32Array | null;
  ends: Int32Array | null;
}

/** The controls isControl tells (Unicode calls exactly these Cc). */
const CONTROL = /\p{Cc}/u;

/** Reads the text as a reader could rebuild a key from it (see the top of this file). */
export function readable(text: string): ReadableText {
  if (!text.includes('%') && !text.includes('\\') && !CONTROL.test(text)) return { text, starts: null, ends: null };
  const codes = new Uint16Array(text.length);
  const starts = new Int32Array(text.length);
  const ends = new Int32Array(text.length);
  let kept = 0;
  for (let i = 0; i < text.length; ) {
    let c = text.charCodeAt(i);
    let length = 1;
    if (c === 37 || c === 92 || isControl(c)) {
      c = readAt(text, i);
      length = readLength;
    }
    if (c !== -1) {
      codes[kept] = c;
      starts[kept] = i;
      ends[kept] = i + length;
      kept++;
    }
    i += length;
  }
  let out = '';
  // In pieces: fromCharCode takes its characters as arguments, and a call has only so many.
  for (let from = 0; from < kept; from += 4096) {
    out += String.fromCharCode.apply(null, codes.subarray(from, Math.min(kept, from + 4096)) as unknown as number[]);
  }
  return { text: out, starts, ends };
}
