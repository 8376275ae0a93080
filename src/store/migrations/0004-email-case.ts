/**
 * Emails are unique regardless of case: a unique index on the lower-cased email, on both dialects. Only
 * ASCII letters are folded, on both (SQLite's lower() folds nothing else; PostgreSQL's folds by locale
 * unless told the "C" collation), so the two stores accept and refuse exactly the same addresses.
 *
 * A store that already holds two emails differing only in case cannot take the index. The migration then
 * stops, changing nothing, and names the accounts: which of them is the real one is the operator's call
 * (merging or renaming accounts is not something to guess), and `migrate` runs again once it is made.
 */
import { sql, type Expression, type Kysely, type RawBuilder } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** The compared form of an email: the index's expression, which lookups must repeat to use it. */
export function emailKey(dialect: Dialect, email: Expression<string>): RawBuilder<string> {
  return dialect === 'postgres' ? sql<string>`lower(${email} collate "C")` : sql<string>`lower(${email})`;
}

const SHOWN = 20;

export function emailCaseMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      const key = emailKey(dialect, sql.ref('email'));
      const clashing = await sql<{ id: number; email: string }>`
        select id, email from accounts
        where ${key} in (select ${key} from accounts group by ${key} having count(*) > 1)
        order by ${key}, id
        limit ${SHOWN + 1}`.execute(db);
      if (clashing.rows.length > 0) {
        const shown = clashing.rows.slice(0, SHOWN).map((r) => `${r.id} <${r.email}>`);
        const more = clashing.rows.length > SHOWN ? ', and more' : '';
        throw new Error(
          `migration 0004-email-case: emails must be unique regardless of case, and these accounts share one: ${shown.join(', ')}${more}. ` +
            'Change the email of all but one of each (update accounts set email = ... where id = ...), then migrate again; nothing was changed.',
        );
      }
      await sql`create unique index accounts_email_ci on accounts (${key})`.execute(db);
    },
  };
}
