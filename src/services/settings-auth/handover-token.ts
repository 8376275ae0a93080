/**
 * Sign-in handover from the platform (docs/contract.md, "Settings screen"): a compact JWT, HS256, signed with a secret
 * shared with the platform; `sub` the account id, `aud` shelfapi-settings, `exp` at most 15 minutes after
 * `iat`, a unique `jti` accepted once. Signing and verifying are jose's; nothing here is our own crypto.
 * Without SETTINGS_HANDOVER_SECRET, the first server or command to need a secret generates one and keeps it
 * in the store, so links from the CLI work on every server.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import type { Config } from '../../config.js';
import type { Store } from '../../store/database.js';
import { getAccount } from '../../store/repositories/account.repository.js';
import { ensureSecret, recordHandoverUse } from '../../store/repositories/settings-auth.repository.js';

export const HANDOVER_AUDIENCE = 'shelfapi-settings';
export const HANDOVER_MAX_MINUTES = 15;
export const SIGN_IN_PATH = '/settings/sign-in';
/** Clocks of the platform and of this service may differ a little. */
const CLOCK_TOLERANCE_S = 30;
const GENERATED_SECRET_NAME = 'handover';

/** The configured secret, or the one kept in the store (made now if no server has made it yet). */
export async function handoverSecret(store: Store, config: Pick<Config, 'settingsHandoverSecret'>, now: number): Promise<Uint8Array> {
  const text =
    config.settingsHandoverSecret ??
    (await ensureSecret(store.db, GENERATED_SECRET_NAME, randomBytes(32).toString('base64url'), new Date(now).toISOString()));
  return new TextEncoder().encode(text);
}

export async function mintHandoverToken(input: { secret: Uint8Array; accountId: number; now: number; minutes?: number }): Promise<{ token: string; expiresAt: number }> {
  const minutes = input.minutes ?? HANDOVER_MAX_MINUTES;
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > HANDOVER_MAX_MINUTES) {
    throw new RangeError(`a sign-in link lasts 1 to ${HANDOVER_MAX_MINUTES} minutes`);
  }
  const iat = Math.floor(input.now / 1000);
  const exp = iat + minutes * 60;
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(String(input.accountId))
    .setAudience(HANDOVER_AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(randomUUID())
    .sign(input.secret);
  return { token, expiresAt: exp * 1000 };
}

/** The full sign-in URL for a token, on PUBLIC_URL or else on the configured host and port. */
export function signInUrl(config: Pick<Config, 'publicUrl' | 'host' | 'port'>, token: string): string {
  const origin = config.publicUrl ?? `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  const url = new URL(SIGN_IN_PATH, origin);
  url.searchParams.set('token', token);
  return url.toString();
}

export type HandoverRefusal = 'invalid' | 'expired' | 'reused' | 'unknown_account';
export type HandoverResult = { ok: true; accountId: number } | { ok: false; reason: HandoverRefusal };

/**
 * Checks a presented token and consumes its jti. Every refusal is a value: the page tells the owner the link
 * has expired or was already used, whatever the reason, and the reason goes to the log (never the token).
 */
export async function redeemHandoverToken(store: Store, secret: Uint8Array, token: string, now: number): Promise<HandoverResult> {
  let payload;
  try {
    ({ payload } = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      audience: HANDOVER_AUDIENCE,
      requiredClaims: ['sub', 'aud', 'iat', 'exp', 'jti'],
      currentDate: new Date(now),
      clockTolerance: CLOCK_TOLERANCE_S,
    }));
  } catch (error) {
    if (error instanceof errors.JWTExpired) return { ok: false, reason: 'expired' };
    if (error instanceof errors.JOSEError) return { ok: false, reason: 'invalid' };
    throw error;
  }
  const { sub, iat, exp, jti } = payload;
  if (typeof sub !== 'string' || !/^[1-9][0-9]{0,15}$/.test(sub) || typeof jti !== 'string' || jti === '' || jti.length > 200) {
    return { ok: false, reason: 'invalid' };
  }
  if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > HANDOVER_MAX_MINUTES * 60 || iat * 1000 > now + CLOCK_TOLERANCE_S * 1000) {
    return { ok: false, reason: 'invalid' };
  }
  // Recorded before anything else can refuse it: a valid token is spent by its first presentation.
  const first = await recordHandoverUse(store.db, jti, new Date((exp + CLOCK_TOLERANCE_S) * 1000).toISOString(), new Date(now).toISOString());
  if (!first) return { ok: false, reason: 'reused' };
  const accountId = Number(sub);
  if (!Number.isSafeInteger(accountId) || !(await getAccount(store.db, accountId))) return { ok: false, reason: 'unknown_account' };
  return { ok: true, accountId };
}
