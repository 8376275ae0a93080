/**
 * The SQLite meter's admission as one row per account (burst_windows; sqlite-meter-rows.ts): the burst
 * window's latest admission times (`recent`), the quota count of one period (`period`, `used`), and each
 * key's last use and count on one day (`day`, `keys`), so an admission reads and writes that one row
 * instead of some ten statements over burst_events, burst_windows, quota_usage, key_usage_daily and
 * api_keys. Added on both dialects so the schemas stay one; the PostgreSQL meter leaves them null.
 *
 * Nothing needs copying: burst_events rows already present stay the account's window (`n` still counts
 * them, and the meter prunes them as before), and a row takes a period's or a day's counts from
 * quota_usage and key_usage_daily (and a key's last use from api_keys) the first time it needs them.
 *
 * No down(): dropping the columns would lose the counts only these rows hold.
 */
import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export function windowRowsMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      // One column per statement: SQLite's ALTER TABLE adds one at a time.
      const blob = dialect === 'postgres' ? 'bytea' : 'blob';
      await db.schema.alterTable('burst_windows').addColumn('recent', blob).execute();
      await db.schema.alterTable('burst_windows').addColumn('period', 'text').execute();
      await db.schema.alterTable('burst_windows').addColumn('used', 'integer').execute();
      await db.schema.alterTable('burst_windows').addColumn('day', 'text').execute();
      await db.schema.alterTable('burst_windows').addColumn('keys', blob).execute();
    },
  };
}
