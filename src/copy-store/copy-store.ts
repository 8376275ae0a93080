/**
 * `shelfapi copy-store`: an SQLite store into an empty PostgreSQL one, all or nothing. In one PostgreSQL
 * transaction: the target is migrated to the latest schema, found empty, and given every row of every
 * table that has a copy rule (table-rules.ts) in the order of its foreign keys, streamed with COPY (the
 * load's bulk writer, which also sets the catalogue's search index and foreign keys aside while a large
 * catalogue goes in); then the SQLite meter's own rows are merged in (meter-state.ts), the id sequences
 * moved past the copied ids, and each table's row count checked against the source's. With Redis, the
 * counts go there too (redis-counts.ts) before the commit. A refusal or a failure at any point rolls the
 * transaction back: the target is left as it was found, not even migrated. The source is only read.
 *
 * Keys keep working with the same secret because a key is stored only as its hash (and last four
 * characters): copying api_keys as it is copies every key, scopes, expiry, revocation and stop time.
 */
import { sql, type Kysely } from 'kysely';
import { InputError } from '../errors/input-error.js';
import { catalogueBulk, bulkInserter, setAsideCatalogueKeys } from '../load/bulk-insert.js';
import { silentProgress, step, type ProgressSink } from '../load/progress.js';
import type { RedisTarget } from '../metering/redis-client.js';
import { ANALYZE_AFTER_ROWS, refreshStatistics } from '../store/analyze.js';
import { migrateToLatestWithin, openStore, type Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { withWriteTransaction } from '../store/write-transaction.js';
import { mergeMeterRows, type MeterMerge } from './meter-state.js';
import {
  advanceIdentities,
  checkTargetEmpty,
  checkTargetUrl,
  inReferenceOrder,
  setUserTriggers,
  targetColumns,
  unreachable,
} from './postgres-target.js';
import { createTargetDatabase, dropCreatedDatabase, isMissingDatabase } from './create-database.js';
import { clearPrefix, copyCountsToRedis, openEmptyRedis, type RedisCopy, type RedisSession } from './redis-counts.js';
import { shownUrl } from './shown-url.js';
import { openSqliteSource, type SqliteSource } from './sqlite-source.js';
import { TABLE_RULES, isCopied, ruleOf, tablesWithoutRule } from './table-rules.js';

export interface CopyStoreOptions {
  /** Path of the SQLite store file. */
  from: string;
  /** postgres:// URL of the target; its schema is the first of its search_path. */
  to: string;
  /** Where the Redis meter of the target's servers counts, or null when they meter in PostgreSQL. */
  redis: { target: RedisTarget; prefix: string } | null;
  now: number;
  progress?: ProgressSink;
  /** Told the name of the `--to` database when it did not exist and was made (create-database.ts). */
  onCreatedDatabase?: (database: string) => void;
}

export interface CopyReport {
  /** The target, its password left out. */
  target: string;
  schema: string;
  /** Rows in each table of the target after the copy. */
  tables: Record<string, number>;
  /** Tables not copied, and why. */
  skipped: Record<string, string>;
  /** What the SQLite meter's own rows added (meter-state.ts). */
  meter: MeterMerge;
  redis: (RedisCopy & { prefix: string }) | null;
  /** The `--to` database when copy-store made it (it did not exist), else null. */
  createdDatabase: string | null;
}

export async function copyStore(options: CopyStoreOptions): Promise<CopyReport> {
  const url = checkTargetUrl(options.to);
  const progress = options.progress ?? silentProgress;
  const source = openSqliteSource(options.from);
  let redis: RedisSession | null = null;
  let store: Store | null = null;
  try {
    const unknown = tablesWithoutRule(source.tables());
    if (unknown.length > 0) {
      throw new InputError(
        `--from ${options.from}: table ${unknown.join(', ')} is not one copy-store knows how to copy (not shelfapi's, or from a newer release); nothing was changed`,
      );
    }
    if (options.redis !== null) redis = await openEmptyRedis(options.redis.target, options.redis.prefix);
    store = openStore({ dialect: 'postgres', url }, { queryTimeoutMs: null });
    let created: string | null = null;
    try {
      await sql`select 1`.execute(store.db);
    } catch (error) {
      if (!isMissingDatabase(error)) throw unreachable(url, error);
      await store.close();
      store = null;
      created = await createTargetDatabase(url);
      options.onCreatedDatabase?.(created);
      store = openStore({ dialect: 'postgres', url }, { queryTimeoutMs: null });
    }
    let copied: Omit<CopyReport, 'createdDatabase'>;
    try {
      copied = await copyInTransaction(store, source, redis, { ...options, to: url }, progress);
    } catch (error) {
      if (created === null || !(error instanceof InputError)) throw error;
      // The target was absent: leave it so.
      await store.close();
      store = null;
      const dropped = await dropCreatedDatabase(url, created);
      throw new InputError(`${error.message}; the database ${created} made for it was ${dropped ? 'dropped' : 'left, empty: drop it by hand'}`);
    }
    const report: CopyReport = { ...copied, createdDatabase: created };
    if ((report.tables.catalogue_items ?? 0) + (report.tables.price_records ?? 0) >= ANALYZE_AFTER_ROWS) {
      await step(progress, 'statistics', () => refreshStatistics(store!));
    }
    return report;
  } finally {
    source.close();
    redis?.close();
    await store?.close();
  }
}

async function copyInTransaction(
  store: Store,
  source: SqliteSource,
  redis: RedisSession | null,
  options: CopyStoreOptions,
  progress: ProgressSink,
): Promise<Omit<CopyReport, 'createdDatabase'>> {
  let redisWritten = false;
  try {
    return await withWriteTransaction(store, async (trx) => {
      await migrateToLatestWithin(trx, 'postgres');
      const schema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(trx)).rows[0]?.schema ?? '';
      const tables = await checkTargetEmpty(trx, options.to);
      const copied = tables.filter((t) => isCopied(ruleOf(t)));
      const sourceTables = source.tables();
      const absent = copied.filter((t) => !sourceTables.includes(t));
      if (absent.length > 0) throw new InputError(`--from ${source.path}: the store has no table ${absent.join(', ')}; nothing was changed`);

      const ordered = await inReferenceOrder(trx, copied);
      await setUserTriggers(trx, copied, false);
      const restoreKeys = await setAsideCatalogueKeys(trx, copied.filter((t) => t !== 'catalogue_items') as Array<keyof Database>);
      const bulk = bulkInserter(store, trx);
      const catalogue = catalogueBulk(store, bulk, trx);
      for (const table of ordered) {
        const rule = ruleOf(table);
        if (rule.kind === 'meter' || rule.kind === 'skipped') continue;
        // The row the migration put there gives way to the source's.
        if (rule.kind === 'single-row') await sql`delete from ${sql.table(table)}`.execute(trx);
        const columns = await sameColumns(trx, source, table);
        const total = source.count(table);
        // An empty table is not worth a line of progress.
        if (total === 0) continue;
        progress.start(table, total);
        let done = 0;
        for (const rows of source.batches(table, columns)) {
          await (table === 'catalogue_items' ? catalogue.insert(rows) : bulk.insert(table as keyof Database, rows));
          done += rows.length;
          progress.update(done);
        }
        await bulk.flush();
        progress.end(done);
      }
      await catalogue.finish(progress);
      const meter = await step(progress, 'meter counts', () => mergeMeterRows(source, trx, options.now));
      await advanceIdentities(trx);
      await restoreKeys();
      await setUserTriggers(trx, copied, true);

      const counts: Record<string, number> = {};
      for (const table of copied) {
        counts[table] = Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(trx)).rows[0]?.n ?? 0);
        const kind = ruleOf(table).kind;
        const expected = kind === 'rows' || kind === 'single-row' ? source.count(table) : null;
        if (expected !== null && counts[table] !== expected) {
          throw new Error(`table ${table}: ${counts[table]} rows arrived of the source's ${expected}`);
        }
      }
      let copiedToRedis: CopyReport['redis'] = null;
      if (redis !== null) {
        redisWritten = true;
        copiedToRedis = { prefix: redis.prefix, ...(await step(progress, 'redis', () => copyCountsToRedis(redis, trx, options.now))) };
      }
      const skipped = Object.fromEntries(
        Object.entries(TABLE_RULES).flatMap(([table, rule]) => (rule.kind === 'skipped' ? [[table, rule.reason]] : [])),
      );
      return { target: shownUrl(options.to), schema, tables: counts, skipped, meter, redis: copiedToRedis };
    });
  } catch (error) {
    if (redisWritten && redis !== null) await clearPrefix(redis).catch(() => {});
    if (error instanceof InputError) throw error;
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new InputError(`the copy failed and was rolled back, the target left as it was: ${message}`);
  }
}

/** The columns of a table, the same in both stores (both are at the latest migration), or an error naming the difference. */
async function sameColumns(trx: Kysely<Database>, source: SqliteSource, table: string): Promise<string[]> {
  const target = await targetColumns(trx, table);
  const from = source.columns(table);
  const missing = target.filter((c) => !from.includes(c));
  const extra = from.filter((c) => !target.includes(c));
  if (missing.length > 0 || extra.length > 0) {
    throw new InputError(
      `table ${table} has other columns in the source than in the target (${[...missing.map((c) => `target only: ${c}`), ...extra.map((c) => `source only: ${c}`)].join(', ')}); nothing was changed`,
    );
  }
  return target;
}
