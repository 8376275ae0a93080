/**
 * The rules for what is asked of a key's fields, for every way a key is made or changed (the command line,
 * `load`, the settings screen): its name, its scopes and the addresses it may be used from. Pure: they read
 * the input and refuse it with an InputError naming the field.
 */
import { AddressMatcher, MAX_ALLOWED_ADDRESSES, parseAddressList } from '../domain/address-list.js';
import { isScope, SCOPES, type Scope } from '../domain/scopes.js';
import { InputError } from '../errors/input-error.js';

export const KEY_NAME_MAX = 64;
/** The name the command line gives a key when none is asked for (then "default 2", "default 3", ...). */
export const DEFAULT_KEY_NAME = 'default';

const CONTROL = /[\p{Cc}\p{Cs}]/u;

/**
 * A key's name as stored: trimmed, 1 to 64 characters, no control characters (names are shown in terminal
 * tables and on the settings screen). The one rule for every way a key is named (CLI, `load`, settings).
 */
export function validateKeyName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === '') throw new InputError('Give the key a name.', 'name');
  const length = [...trimmed].length;
  if (length > KEY_NAME_MAX) throw new InputError(`A key name has at most ${KEY_NAME_MAX} characters (got ${length}).`, 'name');
  if (CONTROL.test(trimmed)) throw new InputError('A key name must not contain control characters.', 'name');
  return trimmed;
}

/** Scopes from a comma-separated list (the command line) or a list of values (the screen's checkboxes). */
export function parseScopes(input: string | readonly string[]): Scope[] {
  const list = typeof input === 'string' ? input.split(',') : input;
  const scopes = list.map((s) => s.trim()).filter((s) => s !== '');
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw new InputError(`unknown scope ${unknown.join(', ')} (scopes: ${SCOPES.join(', ')})`, 'scopes');
  // In the contract's order, whatever order they were given in.
  return SCOPES.filter((s) => scopes.includes(s));
}

/** At least one scope: a key with none could only call /me. */
export function requireScopes(scopes: readonly string[]): Scope[] {
  const parsed = parseScopes(scopes);
  if (parsed.length === 0) throw new InputError('Choose at least one scope.', 'scopes');
  return parsed;
}

/**
 * A key's allowed addresses from the form's text or the command line's list: IPv4 or IPv6 addresses and
 * CIDR ranges, separated by commas, spaces or lines, in canonical form (a range by its network address,
 * ::ffff:127.0.0.1 as 127.0.0.1), each once, at most MAX_ALLOWED_ADDRESSES. Empty: any address.
 */
export function parseAllowedAddresses(input: string | readonly string[]): string[] {
  const { ranges, invalid } = parseAddressList(input);
  if (invalid.length > 0) {
    const shown = invalid.slice(0, 5).map((e) => JSON.stringify(e.length > 60 ? `${e.slice(0, 60)}…` : e));
    throw new InputError(
      `${shown.join(', ')}${invalid.length > 5 ? ` and ${invalid.length - 5} more` : ''} ${invalid.length === 1 ? 'is not an IP address or a CIDR range' : 'are not IP addresses or CIDR ranges'} (such as 203.0.113.7, 2001:db8::1 or 10.0.0.0/8).`,
      'addresses',
    );
  }
  if (ranges.length > MAX_ALLOWED_ADDRESSES) {
    throw new InputError(`A key allows at most ${MAX_ALLOWED_ADDRESSES} addresses or ranges (got ${ranges.length}); use CIDR ranges to cover more.`, 'addresses');
  }
  return ranges.map((r) => r.text);
}

/**
 * Whether a list (as parseAllowedAddresses gives it) leaves `address` out: the owner, at that address now,
 * would be refused there. The screen asks before saving such a list.
 */
export function locksOut(addresses: readonly string[], address: string): boolean {
  return addresses.length > 0 && !new AddressMatcher(parseAddressList(addresses).ranges).matches(address);
}

/** What the screen says before saving a list that leaves the owner's own address out. */
export function lockOutWarning(address: string): string {
  return `Your current address, ${address}, is not in this list: requests with this key from here (this network) will be refused with 401. Save anyway if the key is used only from the addresses listed, or add ${address}.`;
}
