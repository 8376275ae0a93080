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

const isBase62 = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isKeyCharacter = (c: number) => isBase62(c) || c === 95; // `_`
/** C0 controls, DEL and C1 controls: what the API refuses in text, and what a reader skips to rejoin a split secret. */
const isControl = (c: number) => c < 32 || (c >= 127 && c <= 159);
const base62Digit = (c: number) => (c <= 57 ? c - 48 : c <= 90 ? c - 55 : c - 61);

/** CRC-32 (IEEE, as zlib's crc32) of one byte, without zlib's inversions: the register is linear in its input. */
const TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  TABLE[n] = c >>> 0;
}
const step = (register: number, byte: number) => (TABLE[(register ^ byte) & 0xff]! ^ (register >>> 8)) >>> 0;
const afterZeros = (register: number, count: number) => {
  let r = register;
  for (let i = 0; i < count; i++) r = step(r, 0);
  return r;
};
/** What a byte leaving the window contributed to the register once the SECRET_LENGTH bytes of the window that follows it were read. */
const LEAVING = new Uint32Array(256);
for (let b = 0; b < 256; b++) LEAVING[b] = afterZeros(step(0, b), SECRET_LENGTH);

/**
 * Per prefix: crc32(`<prefix>_live_` + secret) = head XOR (the register of the secret alone, from 0), since
 * the register after the prefix only shifts through the secret's 43 bytes (CRC-32 is linear).
 */
const heads = new Map<string, number>();

/** Makes this process recognise the secrets of keys with this prefix (config.keyPrefix); the contract's default from the start. */
export function recogniseSecretsOf(prefix: string): void {
  if (heads.has(prefix)) return;
  const afterPrefix = ~crc32(`${prefix}_live_`) >>> 0;
  heads.set(prefix, ~afterZeros(afterPrefix, SECRET_LENGTH) >>> 0);
}
recogniseSecretsOf('shelf');

/** The prefixes recognised: handed to a thread that writes the request log (src/usage-stats). */
export function recognisedPrefixes(): string[] {
  return [...heads.keys()];
}

/** Starts (in `text`) of every secret with its checksum in a run of base62 characters `text[from, to)`. */
function secretsInRun(text: string, from: number, to: number, found: number[]): void {
  let register = 0;
  for (let i = from; i < from + SECRET_LENGTH; i++) register = step(register, text.charCodeAt(i));
  for (let start = from; start + SECRET_AND_CHECKSUM <= to; start++) {
    if (start > from) register = (step(register, text.charCodeAt(start + SECRET_LENGTH - 1)) ^ LEAVING[text.charCodeAt(start - 1)]!) >>> 0;
    let written = 0;
    for (let i = start + SECRET_LENGTH; i < start + SECRET_AND_CHECKSUM; i++) written = written * 62 + base62Digit(text.charCodeAt(i));
    for (const head of heads.values()) {
      if (((head ^ register) >>> 0) === written) {
        found.push(start);
        break;
      }
    }
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

/**
 * True when reading the text needs no decoding and no skipping (no `%`, no `\`, no control character) and it
 * has no run of base62 characters long enough to hold a secret: most texts, looked at in one pass.
 */
export function isPlainOfSecrets(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isBase62(c)) {
      if (++run >= SECRET_AND_CHECKSUM) return false;
      continue;
    }
    run = 0;
    if (c === 37 || c === 92 || isControl(c)) return false;
  }
  return true;
}

/** The text as a reader could rebuild a key from it, and, for each of its characters, where it came from. */
export interface ReadableText {
  text: string;
  /** Where each character of `text` starts in the original text, and where it ends. */
  starts: number[];
  ends: number[];
}

/** A percent-escape, escaped again any number of times (`%0A`, `%250A`), as a reader of a log decodes it. */
const ESCAPE = /%(?:25)*([0-9A-Fa-f]{2})/y;

/** The percent-escape at `at`: its length and byte, or null. */
function escapeAt(text: string, at: number): { length: number; byte: number } | null {
  ESCAPE.lastIndex = at;
  const found = ESCAPE.exec(text);
  return found === null ? null : { length: found[0].length, byte: parseInt(found[1]!, 16) };
}

/** `\n`, `\\n`, `\u000a`...: a control character as JSON writes it, however many times the text was JSON-encoded. */
const JSON_CONTROL = /\\+(?:[nrtbf]|u00(?:[01][0-9A-Fa-f]|7[Ff]|[89][0-9A-Fa-f]))/y;

/** Reads the text as a reader could rebuild a key from it (see the top of this file). */
export function readable(text: string): ReadableText {
  let out = '';
  const starts: number[] = [];
  const ends: number[] = [];
  const keep = (c: string, start: number, end: number) => {
    out += c;
    starts.push(start);
    ends.push(end);
  };
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === 37) {
      const escape = escapeAt(text, i);
      if (escape !== null) {
        let length = escape.length;
        // UTF-8's C1 controls (`%C2%85`, NEL) are controls too.
        const next = escape.byte === 0xc2 && text.charCodeAt(i + length) === 37 ? escapeAt(text, i + length) : null;
        if (next !== null && next.byte >= 0x80 && next.byte <= 0x9f) length += next.length;
        else if (isKeyCharacter(escape.byte)) keep(String.fromCharCode(escape.byte), i, i + length);
        else if (!isControl(escape.byte)) keep(' ', i, i + length);
        i += length;
        continue;
      }
    } else if (c === 92) {
      JSON_CONTROL.lastIndex = i;
      if (JSON_CONTROL.test(text)) {
        i = JSON_CONTROL.lastIndex;
        continue;
      }
    } else if (isControl(c)) {
      i++;
      continue;
    }
    keep(text[i]!, i, i + 1);
    i++;
  }
  return { text: out, starts, ends };
}
