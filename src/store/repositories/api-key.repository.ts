/** API keys and the accounts they belong to. */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

export interface KeyWithAccount {
  keyId: number;
  accountId: number;
  scopes: string;
  expiresAt: string | null;
  revokedAt: string | null;
  /** A rolled key's stop time: refused from then on, with no job having to run. */
  retiresAt: string | null;
  /** The addresses and ranges the key may be used from, space-separated; null: any address. */
  allowedAddresses: string | null;
  plan: string;
  planStatus: string | null;
  /** The account's access version read in the same statement (migration 0008): the row is current while it is. */
  accessVersion: number;
}

/**
 * The key by its hash, with its account's plan: every request's lookup unless a server holds it
 * (src/auth/principal-cache.ts). The account's columns come from scalar subqueries by primary key, not a
 * join: with a join SQLite scans api_keys whenever its statistics were taken while the table held only a
 * few keys (as after `seed`), and even with fresh statistics the join cost 22-25 us against 8-10 us here.
 * One statement either way, so the row and its access version are one snapshot.
 */
export function keyByHashQuery(db: Kysely<Database>, keyHash: string) {
  return db
    .selectFrom('api_keys as k')
    .select((eb) => [
      'k.id as keyId',
      'k.account_id as accountId',
      'k.scopes as scopes',
      'k.expires_at as expiresAt',
      'k.revoked_at as revokedAt',
      'k.retires_at as retiresAt',
      'k.allowed_addresses as allowedAddresses',
      eb.selectFrom('accounts as a').select('a.plan').whereRef('a.id', '=', 'k.account_id').as('plan'),
      eb.selectFrom('accounts as a').select('a.plan_status').whereRef('a.id', '=', 'k.account_id').as('planStatus'),
      eb.selectFrom('accounts as a').select('a.access_version').whereRef('a.id', '=', 'k.account_id').as('accessVersion'),
    ])
    .where('k.key_hash', '=', keyHash)
    .$castTo<KeyWithAccount>();
}

export interface KeyRecord {
  id: number;
  accountId: number;
  name: string;
  lastFour: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /** When a rolled key stops working (null unless rolled with a later stop). */
  retiresAt: string | null;
  /** The key that replaced this one when it was rolled. */
  replacedBy: number | null;
  /** The addresses and CIDR ranges the key may be used from, in canonical form; empty: any address. */
  allowedAddresses: string[];
}

const keyColumns = [
  'id',
  'account_id as accountId',
  'name',
  'last_four as lastFour',
  'scopes',
  'created_at as createdAt',
  'expires_at as expiresAt',
  'revoked_at as revokedAt',
  'last_used_at as lastUsedAt',
  'retires_at as retiresAt',
  'replaced_by as replacedBy',
  'allowed_addresses as allowedAddresses',
] as const;

/** The stored list (null or space-separated) as a list. */
const addressList = (stored: string | null): string[] => (stored === null || stored === '' ? [] : stored.split(' '));
/** A list as stored: null for any address, so that the key lookup tells "no list" apart at a glance. */
const storedAddresses = (list: readonly string[]): string | null => (list.length === 0 ? null : list.join(' '));

function toKeyRecord(row: Omit<KeyRecord, 'scopes' | 'allowedAddresses'> & { scopes: string; allowedAddresses: string | null }): KeyRecord {
  return { ...row, scopes: row.scopes === '' ? [] : row.scopes.split(' '), allowedAddresses: addressList(row.allowedAddresses) };
}

export async function insertKey(
  db: Kysely<Database>,
  key: {
    id?: number;
    accountId: number;
    name: string;
    keyHash: string;
    lastFour: string;
    scopes: readonly string[];
    createdAt: string;
    expiresAt: string | null;
    revokedAt: string | null;
    allowedAddresses?: readonly string[];
  },
): Promise<number> {
  const row = await db
    .insertInto('api_keys')
    .values({
      ...(key.id === undefined ? {} : { id: key.id }),
      account_id: key.accountId,
      name: key.name,
      key_hash: key.keyHash,
      last_four: key.lastFour,
      scopes: key.scopes.join(' '),
      created_at: key.createdAt,
      expires_at: key.expiresAt,
      revoked_at: key.revokedAt,
      ...(key.allowedAddresses === undefined ? {} : { allowed_addresses: storedAddresses(key.allowedAddresses) }),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function listKeys(db: Kysely<Database>, accountId: number): Promise<KeyRecord[]> {
  const rows = await db.selectFrom('api_keys').select(keyColumns).where('account_id', '=', accountId).orderBy('id').execute();
  return rows.map(toKeyRecord);
}

export async function getKey(db: Kysely<Database>, id: number): Promise<KeyRecord | undefined> {
  const row = await db.selectFrom('api_keys').select(keyColumns).where('id', '=', id).executeTakeFirst();
  return row && toKeyRecord(row);
}

/** Changes what the settings screen and the CLI may change on a key: its name, scopes, allowed addresses or stop time. */
export async function updateKey(
  db: Kysely<Database>,
  id: number,
  change: { name?: string; scopes?: readonly string[]; allowedAddresses?: readonly string[]; retiresAt?: string; replacedBy?: number },
): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({
      ...(change.name === undefined ? {} : { name: change.name }),
      ...(change.scopes === undefined ? {} : { scopes: change.scopes.join(' ') }),
      ...(change.allowedAddresses === undefined ? {} : { allowed_addresses: storedAddresses(change.allowedAddresses) }),
      ...(change.retiresAt === undefined ? {} : { retires_at: change.retiresAt }),
      ...(change.replacedBy === undefined ? {} : { replaced_by: change.replacedBy }),
    })
    .where('id', '=', id)
    .execute();
}

/** Revokes a key; a key revoked already keeps its first revocation time. */
export async function revokeKey(db: Kysely<Database>, id: number, at: string): Promise<KeyRecord | undefined> {
  await db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  return getKey(db, id);
}
