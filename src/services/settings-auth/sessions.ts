/**
 * Settings sessions (docs/contract.md, "Settings screen"): the cookie holds 256 random bits; the store keeps only their
 * SHA-256, so a copy of the database signs nobody in. Idle expiry 2 hours, absolute 12 hours; ending a
 * session deletes its row, which every server sees on its next request.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '../../store/database.js';
import {
  deleteSession,
  findSession,
  insertSession,
  pruneSessions,
  touchSession,
} from '../../store/repositories/settings-auth.repository.js';

export const SESSION_COOKIE = 'shelfapi_settings';
export const SESSION_IDLE_MS = 2 * 60 * 60 * 1000;
export const SESSION_ABSOLUTE_MS = 12 * 60 * 60 * 1000;
/** last_seen_at is written at most this often: a page view must not always cost a write. */
const TOUCH_EVERY_MS = 60 * 1000;
const TOKEN_BYTES = 32;

export interface Session {
  /** SHA-256 of the cookie's value (hex): how the store and the form tokens know this session. */
  idHash: string;
  accountId: number;
  /** When the owner signed in: the start of the reauthentication window. */
  signedInAt: number;
  lastSeenAt: number;
}

export const sessionHash = (token: string) => createHash('sha256').update(token).digest('hex');

const iso = (ms: number) => new Date(ms).toISOString();

/** Starts a session for the account; the returned token goes into the cookie and nowhere else. */
export async function startSession(store: Store, accountId: number, now: number, address: string | null): Promise<{ token: string; session: Session }> {
  // Expired sessions are cleared as new ones start, so the table holds only live ones and recent leftovers.
  await pruneSessions(store.db, iso(now - SESSION_IDLE_MS), iso(now - SESSION_ABSOLUTE_MS));
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const idHash = sessionHash(token);
  await insertSession(store.db, { idHash, accountId, createdAt: iso(now), lastSeenAt: iso(now), address });
  return { token, session: { idHash, accountId, signedInAt: now, lastSeenAt: now } };
}

/** The live session a cookie names, or null (no such session, idle too long, or too old). */
export async function loadSession(store: Store, token: string | undefined, now: number): Promise<Session | null> {
  if (token === undefined || token === '' || token.length > 100) return null;
  const row = await findSession(store.db, sessionHash(token));
  if (row === undefined) return null;
  const signedInAt = Date.parse(row.createdAt);
  const lastSeenAt = Date.parse(row.lastSeenAt);
  if (now - lastSeenAt > SESSION_IDLE_MS || now - signedInAt > SESSION_ABSOLUTE_MS) {
    await deleteSession(store.db, row.idHash);
    return null;
  }
  if (now - lastSeenAt >= TOUCH_EVERY_MS) await touchSession(store.db, row.idHash, iso(now));
  return { idHash: row.idHash, accountId: row.accountId, signedInAt, lastSeenAt: Math.max(lastSeenAt, now) };
}

export async function endSession(store: Store, idHash: string): Promise<void> {
  await deleteSession(store.db, idHash);
}

/** True while the sign-in is recent enough for create, roll, revoke and scope changes. */
export function withinReauthWindow(session: Session, now: number, reauthMinutes: number): boolean {
  return now - session.signedInAt <= reauthMinutes * 60 * 1000;
}
