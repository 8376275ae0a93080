/**
 * A write transaction for operator commands (load, import, seed). On SQLite it starts with BEGIN IMMEDIATE:
 * a deferred transaction that reads first cannot later upgrade to a writer while running servers keep
 * committing meter counts (SQLITE_BUSY_SNAPSHOT); taking the write lock first lets busy_timeout queue
 * it fairly. Operator commands own their process, so nothing else runs on the connection meanwhile.
 */
import type { Kysely } from 'kysely';
import type { Store } from './database.js';
import type { Database } from './schema.js';

export async function withWriteTransaction<T>(store: Store, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const sqlite = store.sqlite;
  if (sqlite === null) return store.db.transaction().execute(work);
  sqlite.exec('BEGIN IMMEDIATE');
  try {
    const result = await work(store.db);
    sqlite.exec('COMMIT');
    return result;
  } catch (error) {
    if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
    throw error;
  }
}
