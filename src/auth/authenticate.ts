/**
 * Steps 2 and 3 of the request pipeline: find the key in exactly one header, refuse malformed keys before
 * any lookup, then check the key and its account's plan against the store on every request, so a revoke
 * or a lapsed plan takes effect on the very next request on every server.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isScope, PLANS, type Plan, type PlanLimits, type Scope } from '../domain/scopes.js';
import { ApiError } from '../http/errors.js';
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

const unauthorized = (message: string) => new ApiError('unauthorized', message);

/** The presented key, or an ApiError naming what is wrong with the headers. */
export function presentedKey(headers: IncomingHttpHeaders): string {
  const authorization = headers.authorization;
  const apiKey = headers['x-api-key'];
  if (authorization !== undefined && apiKey !== undefined) {
    throw unauthorized('Present the key in exactly one of Authorization and X-API-Key, not both.');
  }
  if (apiKey !== undefined) {
    if (Array.isArray(apiKey)) throw unauthorized('X-API-Key is given more than once.');
    return apiKey.trim();
  }
  if (authorization !== undefined) {
    const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (!match) throw unauthorized('Authorization must use the Bearer scheme: "Authorization: Bearer <API_KEY>".');
    return match[1] as string;
  }
  throw unauthorized('An API key is required: send "Authorization: Bearer <API_KEY>" or "X-API-Key: <API_KEY>".');
}

export async function authenticate(headers: IncomingHttpHeaders, now: number, deps: AuthDeps): Promise<Principal> {
  const key = presentedKey(headers);
  if (!isWellFormedKey(key, deps.keyPrefix)) throw unauthorized('The API key is not valid.');
  const row = await deps.findKey(hashKey(key));
  if (!row) throw unauthorized('The API key is not valid.');
  if (row.revokedAt !== null) throw unauthorized('The API key has been revoked.');
  if (row.expiresAt !== null && Date.parse(row.expiresAt) <= now) throw unauthorized('The API key has expired.');
  if (row.planStatus !== 'active' || !(PLANS as readonly string[]).includes(row.plan)) {
    throw new ApiError('forbidden', 'Developer API access is not active on this account.');
  }
  const plan = row.plan as Plan;
  return {
    keyId: row.keyId,
    accountId: row.accountId,
    plan,
    scopes: new Set(row.scopes.split(' ').filter(isScope)),
    limits: deps.planLimits[plan],
  };
}
