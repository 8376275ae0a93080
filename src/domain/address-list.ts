/**
 * IP addresses and CIDR ranges, as a key's allowed addresses and TRUST_PROXY give them: parsed once into
 * bytes, kept in one canonical text (an IPv4-mapped IPv6 address as plain IPv4, a range by its network
 * address, /32 and /128 as the address alone), and matched by a tiny prefix comparison, so that 127.0.0.1
 * rules match a client the socket reports as ::ffff:127.0.0.1.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** A key carries at most this many allowed addresses or ranges. */
export const MAX_ALLOWED_ADDRESSES = 50;

export interface AddressRange {
  /** 4 bytes (IPv4, IPv4-mapped IPv6 included) or 16 (IPv6), host bits cleared. */
  readonly bytes: Uint8Array;
  /** Leading bits that must match: 0..32 or 0..128. */
  readonly prefix: number;
  /** The canonical text: `203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`. */
  readonly text: string;
}

function ipv4Bytes(text: string): Uint8Array | null {
  if (!isIPv4(text)) return null;
  return Uint8Array.from(text.split('.').map(Number));
}

function ipv6Bytes(text: string): Uint8Array | null {
  // Zone ids (fe80::1%eth0) name an interface of one machine: never a client of ours, nor a rule.
  if (text.includes('%') || !isIPv6(text)) return null;
  const groups: number[] = [];
  const toGroups = (part: string): number[] | null => {
    if (part === '') return [];
    const out: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const v4 = ipv4Bytes(piece);
        if (v4 === null) return null;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else out.push(parseInt(piece, 16));
    }
    return out;
  };
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = toGroups(head);
  const right = tail === undefined ? [] : toGroups(tail);
  if (left === null || right === null) return null;
  groups.push(...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right);
  if (groups.length !== 8) return null;
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

const isV4Mapped = (b: Uint8Array) => b.length === 16 && b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;

/** An address's bytes (IPv4-mapped IPv6 as IPv4), or null when the text is not an IP address. */
export function addressBytes(text: string): Uint8Array | null {
  const v4 = ipv4Bytes(text);
  if (v4 !== null) return v4;
  const v6 = ipv6Bytes(text);
  if (v6 === null) return null;
  return isV4Mapped(v6) ? v6.slice(12) : v6;
}

function formatBytes(bytes: Uint8Array): string {
  if (bytes.length === 4) return bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  // The URL parser writes IPv6 in its canonical short form (RFC 5952: the longest run of zeros as ::).
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}

/** An address in the canonical text ranges use (::ffff:127.0.0.1 is 127.0.0.1); the text as given if it is none. */
export function canonicalAddress(text: string): string {
  const bytes = addressBytes(text);
  return bytes === null ? text : formatBytes(bytes);
}

/** An address (`203.0.113.7`, `2001:db8::1`) or a CIDR range (`10.0.0.0/8`); null when it is neither. */
export function parseRange(input: string): AddressRange | null {
  const text = input.trim();
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const bits = slash === -1 ? null : text.slice(slash + 1);
  const raw = ipv4Bytes(address) ?? ipv6Bytes(address);
  if (raw === null) return null;
  let prefix = raw.length * 8;
  if (bits !== null) {
    if (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > prefix) return null;
    prefix = Number(bits);
  }
  let bytes = raw;
  // ::ffff:10.0.0.0/104 is 10.0.0.0/8: clients are matched as IPv4.
  if (isV4Mapped(raw) && prefix >= 96) {
    bytes = raw.slice(12);
    prefix -= 96;
  }
  bytes = Uint8Array.from(bytes, (b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
  const full = prefix === bytes.length * 8;
  return { bytes, prefix, text: full ? formatBytes(bytes) : `${formatBytes(bytes)}/${prefix}` };
}

/**
 * Entries from a comma-separated (or line- or space-separated) text, or a list of them: the ranges in the
 * order given, each once (duplicates after canonical form are folded), and the entries that are neither an
 * address nor a range.
 */
export function parseAddressList(input: string | readonly string[]): { ranges: AddressRange[]; invalid: string[] } {
  const entries = (typeof input === 'string' ? [input] : input).flatMap((part) => part.split(/[\s,]+/)).filter((e) => e !== '');
  const ranges: AddressRange[] = [];
  const seen = new Set<string>();
  const invalid: string[] = [];
  for (const entry of entries) {
    const range = parseRange(entry);
    if (range === null) invalid.push(entry);
    else if (!seen.has(range.text)) {
      seen.add(range.text);
      ranges.push(range);
    }
  }
  return { ranges, invalid };
}

/** Whether an address falls in any of a list of ranges. */
export class AddressMatcher {
  constructor(readonly ranges: readonly AddressRange[]) {}

  /** The address as text (any form, IPv4-mapped included); false for anything that is not an address. */
  matches(address: string): boolean {
    const bytes = addressBytes(address);
    return bytes !== null && this.matchesBytes(bytes);
  }

  matchesBytes(bytes: Uint8Array): boolean {
    let mapped: Uint8Array | null = null;
    for (const range of this.ranges) {
      if (range.bytes.length === bytes.length) {
        if (holds(range, bytes)) return true;
      } else if (bytes.length === 4) {
        // An IPv4 client is also its IPv4-mapped form, ::ffff:a.b.c.d: an IPv6 range holding that (::/0,
        // ::/8) holds the client. Ranges within ::ffff:0:0/96 were made IPv4 by parseRange already.
        mapped ??= v4Mapped(bytes);
        if (holds(range, mapped)) return true;
      }
    }
    return false;
  }
}

function v4Mapped(v4: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(16);
  bytes[10] = 0xff;
  bytes[11] = 0xff;
  bytes.set(v4, 12);
  return bytes;
}

/** Whether `bytes` (as long as the range's) fall in the range: its leading `prefix` bits are the same. */
function holds(range: AddressRange, bytes: Uint8Array): boolean {
  let i = 0;
  let left = range.prefix;
  for (; left >= 8; i++, left -= 8) if (range.bytes[i] !== bytes[i]) return false;
  return left === 0 || (bytes[i]! & ((0xff << (8 - left)) & 0xff)) === range.bytes[i];
}
