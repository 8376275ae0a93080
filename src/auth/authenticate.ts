/**
 * Steps 2 to 4 of the request pipeline: find the key in exactly one header, refuse malformed keys before
 * any lookup, then check the key, the address it is used from (when the key has allowed addresses) and
 * its account's plan as the store has them on every request (through `findKey`, which may hold rows while
 * the store says they are current: principal-cache.ts), so a revoke, a new address list or a lapsed plan
 * takes effect on the very next request on every server.
 */
import { AddressMatcher, parseAddressList } from '../domain/address-list.js';
import { isScope, PLANS, type Plan, type PlanLimits, type Scope } from '../domain/scopes.js';
import { AuthError } from '../errors/auth-error.js';
import { hashKey, isWellFormedKey } from '../keys/api-key.js';
import type { KeyWithAccount } from '../store/repositories/api-key.repository.js';

export interface Principal {
  keyId: number;
  accountId: number;
  plan: Plan;
  scopes: ReadonlySet<Scope>;
  limits: PlanLimits;
}

export interface AuthDeps {
  findKey: (keyHash: string) => Promise<KeyWithAccount | undefined>;
  keyPrefix: string;
  planLimits: Readonly<Record<Plan, PlanLimits>>;
}

/**
 * Where the client's address is read (the request: a getter that works it out by the TRUST_PROXY rule),
 * only for a key that has allowed addresses. An object the caller has anyway, not a function made per
 * request: a key without a list costs nothing more.
 */
export interface ClientAddressSource {
  readonly clientAddress: string;
}

const unauthorized = (message: string) => new AuthError('unauthorized', message);

/**
 * Every value of the two key headers, in order, from Node's raw header lines (`[name, value, name, value,
 * ...]`), in one pass: every request reads them.
 */
function keyHeaderValues(rawHeaders: readonly string[]): { authorization: string[]; apiKey: string[] } {
  const authorization: string[] = [];
  const apiKey: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    if (name === 'authorization') authorization.push(rawHeaders[i + 1] as string);
    else if (name === 'x-api-key') apiKey.push(rawHeaders[i + 1] as string);
  }
  return { authorization, apiKey };
}

/** Why a known key was refused, for its owner's statistics. */
export type KeyRefusal = 'revoked_or_expired' | 'refused_address' | 'plan';

/**
 * A known key refused (revoked, rolled past its stop time, expired, used from an address it is not allowed,
 * or its account's plan not active). The client sees exactly the AuthError; the key and account ids and the
 * reason let the pipeline attribute the attempt to the key in its owner's statistics.
 */
export class RefusedKeyError extends AuthError {
  constructor(
    readonly keyId: number,
    readonly accountId: number,
    readonly refusal: KeyRefusal,
    message: string,
  ) {
    super(refusal === 'plan' ? 'forbidden' : 'unauthorized', message);
  }
}

/**
 * The presented key, or an AuthError naming what is wrong with the headers. Read from the raw header lines:
 * Node keeps only the first of two Authorization headers and joins two X-API-Key headers with a comma, so
 * its parsed headers cannot tell that a key header was given twice.
 */
export function presentedKey(rawHeaders: readonly string[]): string {
  const { authorization, apiKey } = keyHeaderValues(rawHeaders);
  if (authorization.length > 0 && apiKey.length > 0) {
    throw unauthorized('Present the key in exactly one of Authorization and X-API-Key, not both.');
  }
  if (apiKey.length > 1) throw unauthorized('X-API-Key is given more than once.');
  if (authorization.length > 1) throw unauthorized('Authorization is given more than once.');
  const [key] = apiKey;
  if (key !== undefined) return key.trim();
  const [credentials] = authorization;
  if (credentials !== undefined) {
    const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(credentials);
    if (!match) throw unauthorized('Authorization must use the Bearer scheme: "Authorization: Bearer <API_KEY>".');
    return match[1] as string;
  }
  throw unauthorized('An API key is required: send "Authorization: Bearer <API_KEY>" or "X-API-Key: <API_KEY>".');
}

/** What authenticate derives from a key's row, once per row object: a row held in memory is checked often. */
interface ParsedRow {
  scopes: ReadonlySet<Scope>;
  expiresAtMs: number | null;
  retiresAtMs: number | null;
  /** Null for a key usable from any address: such keys never work out the client's address. */
  allowed: AddressMatcher | null;
}

const parsedRows = new WeakMap<KeyWithAccount, ParsedRow>();

function parsedRow(row: KeyWithAccount): ParsedRow {
  let parsed = parsedRows.get(row);
  if (parsed === undefined) {
    parsed = {
      scopes: new Set(row.scopes.split(' ').filter(isScope)),
      expiresAtMs: row.expiresAt === null ? null : Date.parse(row.expiresAt),
      retiresAtMs: row.retiresAt === null ? null : Date.parse(row.retiresAt),
      // An entry written by hand that is no address is left out: the key is then allowed less, never more.
      allowed: row.allowedAddresses === null ? null : new AddressMatcher(parseAddressList(row.allowedAddresses).ranges),
    };
    parsedRows.set(row, parsed);
  }
  return parsed;
}

export async function authenticate(rawHeaders: readonly string[], now: number, deps: AuthDeps, client: ClientAddressSource): Promise<Principal> {
  const key = presentedKey(rawHeaders);
  if (!isWellFormedKey(key, deps.keyPrefix)) throw unauthorized('The API key is not valid.');
  const row = await deps.findKey(hashKey(key));
  if (!row) throw unauthorized('The API key is not valid.');
  const refuse = (refusal: KeyRefusal, message: string) => new RefusedKeyError(row.keyId, row.accountId, refusal, message);
  const parsed = parsedRow(row);
  // A rolled key stops at its stop time by this comparison alone: no job has to run at that time.
  if (row.revokedAt !== null || (parsed.retiresAtMs !== null && parsed.retiresAtMs <= now)) {
    throw refuse('revoked_or_expired', 'The API key has been revoked.');
  }
  if (parsed.expiresAtMs !== null && parsed.expiresAtMs <= now) throw refuse('revoked_or_expired', 'The API key has expired.');
  if (parsed.allowed !== null) {
    const address = client.clientAddress;
    if (!parsed.allowed.matches(address)) throw refuse('refused_address', `This key may not be used from ${address}.`);
  }
  if (row.planStatus !== 'active' || !(PLANS as readonly string[]).includes(row.plan)) {
    throw refuse('plan', 'Developer API access is not active on this account.');
  }
  const plan = row.plan as Plan;
  return {
    keyId: row.keyId,
    accountId: row.accountId,
    plan,
    scopes: parsed.scopes,
    limits: deps.planLimits[plan],
  };
}
