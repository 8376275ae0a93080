/**
 * A version of the served data, bumped by every write of catalogue, prices or owner data (load, import,
 * seed): servers may keep derived answers (list totals, collection values) for as long as it is unchanged,
 * and check it on each request, so the answers stay exact whichever server or process wrote.
 */
import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export const dataVersionMigration = {
  async up(db: AnyDb): Promise<void> {
    await db.schema
      .createTable('data_version')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('version', 'integer', (c) => c.notNull())
      .execute();
    await sql`insert into data_version (id, version) values (1, 1)`.execute(db);
  },
};
