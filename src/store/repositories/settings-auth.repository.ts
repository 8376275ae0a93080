/**
 * The settings screen's sign-in state: shared secrets, used handover tokens, sessions (by the hash of their
 * cookie), the one-time slot of a new key, and submitted create forms. Every function takes the database
 * first; times are ISO 8601 UTC text like every other table.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

export interface SessionRow {
  idHash: string;
  accountId: number;
  createdAt: string;
  lastSeenAt: string;
  address: string | null;
}

/** Inserts the secret unless one of that name exists, then reads the one that won (any server may race). */
export async function ensureSecret(db: Kysely<Database>, name: string, candidate: string, at: string): Promise<string> {
  await db
    .insertInto('settings_secrets')
    .values({ name, value: candidate, created_at: at })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('settings_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

/**
 * Records a handover token's jti; false when it was recorded before (the token is being reused). Rows of
 * tokens that have expired anyway are pruned first: they can no longer be presented.
 */
export async function recordHandoverUse(db: Kysely<Database>, jti: string, expiresAt: string, now: string): Promise<boolean> {
  await db.deleteFrom('settings_handover_uses').where('expires_at', '<', now).execute();
  const result = await db
    .insertInto('settings_handover_uses')
    .values({ jti, expires_at: expiresAt })
    .onConflict((oc) => oc.column('jti').doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

export async function insertSession(db: Kysely<Database>, session: SessionRow): Promise<void> {
  await db
    .insertInto('settings_sessions')
    .values({
      id_hash: session.idHash,
      account_id: session.accountId,
      created_at: session.createdAt,
      last_seen_at: session.lastSeenAt,
      address: session.address,
    })
    .execute();
}

export async function findSession(db: Kysely<Database>, idHash: string): Promise<SessionRow | undefined> {
  return db
    .selectFrom('settings_sessions')
    .select(['id_hash as idHash', 'account_id as accountId', 'created_at as createdAt', 'last_seen_at as lastSeenAt', 'address'])
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
}

export async function touchSession(db: Kysely<Database>, idHash: string, at: string): Promise<void> {
  await db.updateTable('settings_sessions').set({ last_seen_at: at }).where('id_hash', '=', idHash).execute();
}

/** Deletes the session (its reveal slot goes with it); true when there was one. */
export async function deleteSession(db: Kysely<Database>, idHash: string): Promise<boolean> {
  await db.deleteFrom('settings_reveals').where('session_hash', '=', idHash).execute();
  await db.deleteFrom('settings_form_uses').where('session_hash', '=', idHash).execute();
  const result = await db.deleteFrom('settings_sessions').where('id_hash', '=', idHash).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Deletes sessions idle since before `idleBefore` or started before `startedBefore`, and their slots. */
export async function pruneSessions(db: Kysely<Database>, idleBefore: string, startedBefore: string): Promise<void> {
  const stale = db
    .selectFrom('settings_sessions')
    .select('id_hash')
    .where((eb) => eb.or([eb('last_seen_at', '<', idleBefore), eb('created_at', '<', startedBefore)]));
  await db.deleteFrom('settings_reveals').where('session_hash', 'in', stale).execute();
  await db.deleteFrom('settings_form_uses').where('session_hash', 'in', stale).execute();
  await db
    .deleteFrom('settings_sessions')
    .where((eb) => eb.or([eb('last_seen_at', '<', idleBefore), eb('created_at', '<', startedBefore)]))
    .execute();
}

/**
 * Puts a new key in the session's one-time slot, on the transaction that makes the key; false, changing
 * nothing, while another key made since `notBefore` still waits there to be shown. A key waiting from
 * before `notBefore` can no longer be shown and gives up its place. One insert that does nothing on a
 * conflict: two posts at once never both delete and insert (a unique violation, once a 500).
 */
export async function putReveal(
  db: Kysely<Database>,
  reveal: { sessionHash: string; keyId: number; secret: string; createdAt: string },
  notBefore: string,
): Promise<boolean> {
  await db.deleteFrom('settings_reveals').where('session_hash', '=', reveal.sessionHash).where('created_at', '<', notBefore).execute();
  const result = await db
    .insertInto('settings_reveals')
    .values({ session_hash: reveal.sessionHash, key_id: reveal.keyId, secret: reveal.secret, created_at: reveal.createdAt })
    .onConflict((oc) => oc.column('session_hash').doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** Takes the session's waiting key out of its slot: whoever deletes the row gets it, exactly once. */
export async function takeReveal(
  db: Kysely<Database>,
  sessionHash: string,
  notBefore: string,
): Promise<{ keyId: number; secret: string } | undefined> {
  const row = await db
    .deleteFrom('settings_reveals')
    .where('session_hash', '=', sessionHash)
    .returning(['key_id as keyId', 'secret', 'created_at as createdAt'])
    .executeTakeFirst();
  if (row === undefined || row.createdAt < notBefore) return undefined;
  return { keyId: row.keyId, secret: row.secret };
}

/** Forgets a nonce recorded by this session (a submission that made nothing), so that it counts as new again. */
export async function forgetFormUse(db: Kysely<Database>, nonce: string, sessionHash: string): Promise<void> {
  await db.deleteFrom('settings_form_uses').where('nonce', '=', nonce).where('session_hash', '=', sessionHash).execute();
}

/** Records a submitted form's nonce; false when it was submitted before. Old rows are pruned first. */

export async function recordFormUse(db: Kysely<Database>, nonce: string, sessionHash: string, at: string, pruneBefore: string): Promise<boolean> {
  await db.deleteFrom('settings_form_uses').where('created_at', '<', pruneBefore).execute();
  const result = await db
    .insertInto('settings_form_uses')
    .values({ nonce, session_hash: sessionHash, created_at: at })
    .onConflict((oc) => oc.column('nonce').doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}
