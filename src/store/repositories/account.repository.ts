/** Accounts and their Developer API plan. */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';
import { emailKey } from '../migrations/0004-email-case.js';
import type { Database } from '../schema.js';

export interface AccountRecord {
  id: number;
  email: string;
  plan: string;
  planStatus: string | null;
  createdAt: string;
}

export async function insertAccount(
  db: Kysely<Database>,
  account: { id?: number; email: string; plan: string; planStatus: string | null; createdAt: string },
): Promise<number> {
  const row = await db
    .insertInto('accounts')
    .values({
      ...(account.id === undefined ? {} : { id: account.id }),
      email: account.email,
      plan: account.plan,
      plan_status: account.planStatus,
      created_at: account.createdAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Accounts as AccountRecord: the one place their columns are named. */
function selectAccounts(db: Kysely<Database>) {
  return db.selectFrom('accounts').select(['id', 'email', 'plan', 'plan_status as planStatus', 'created_at as createdAt']);
}

export async function getAccount(db: Kysely<Database>, id: number): Promise<AccountRecord | undefined> {
  return selectAccounts(db).where('id', '=', id).executeTakeFirst();
}

/**
 * The account with this email, ignoring ASCII case: the expression of the unique index accounts_email_ci
 * (migration 0004), so the lookup uses it and agrees with it on both dialects.
 */
export async function findAccountByEmail(db: Kysely<Database>, dialect: Dialect, email: string): Promise<AccountRecord | undefined> {
  return selectAccounts(db).where(emailKey(dialect, sql.ref('email')), '=', emailKey(dialect, sql.val(email))).executeTakeFirst();
}

export async function setPlan(db: Kysely<Database>, id: number, plan: string, planStatus: string | null): Promise<boolean> {
  const result = await db.updateTable('accounts').set({ plan, plan_status: planStatus }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
