/**
 * The request log as one row per key and write (src/usage-stats/request-log-chunks.ts), in place of 0012's row
 * per request: key_request_log_chunks holds a write's lines of a key as one JSON text, oldest first, with the
 * times (epoch ms) of its oldest and newest line. The index (key_id, oldest_ms, newest_ms, lines) answers
 * both the page's read and the sweeps' test ("does the key hold 100 lines newer than this chunk?") without
 * reading the rows. Each key's newest 100 lines move into one chunk; down moves them back to rows.
 */
import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';
import { createRequestLogTable } from './0012-request-log.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** Lines kept per key when they move (the request log's REQUEST_LOG_KEPT when this migration was written). */
const KEPT = 100;
/** Keys moved per read. */
const KEYS_PER_READ = 200;

interface LineRow {
  key_id: number | string;
  at: string;
  method: string;
  path: string;
  status: number;
  error: string | null;
  outcome: string;
  duration_ms: number | string;
  address: string | null;
  request_id: string;
}

type StoredLine = [string, string, string, number, string | null, string, number, string | null, string];

async function keyIdsOf(db: AnyDb, table: string): Promise<number[]> {
  const rows: Array<{ key_id: number | string }> = await db.selectFrom(table).select('key_id').distinct().orderBy('key_id').execute();
  return rows.map((r) => Number(r.key_id));
}

export function requestLogChunksMigration(dialect: Dialect) {
  const pg = dialect === 'postgres';
  const id = pg ? 'bigint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('key_request_log_chunks')
        .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
        .addColumn('key_id', id, (c) => c.notNull())
        .addColumn('oldest_ms', pg ? 'bigint' : 'integer', (c) => c.notNull())
        .addColumn('newest_ms', pg ? 'bigint' : 'integer', (c) => c.notNull())
        .addColumn('lines', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('key_request_log_chunks_key').on('key_request_log_chunks').columns(['key_id', 'oldest_ms', 'newest_ms', 'lines']).execute();

      const keys = await keyIdsOf(db, 'key_request_log');
      for (let i = 0; i < keys.length; i += KEYS_PER_READ) {
        const rows = (await db
          .selectFrom('key_request_log')
          .selectAll()
          .where('key_id', 'in', keys.slice(i, i + KEYS_PER_READ))
          .orderBy('key_id')
          .orderBy('at', 'desc')
          .orderBy('id', 'desc')
          .execute()) as LineRow[];
        const perKey = new Map<number, LineRow[]>();
        for (const r of rows) {
          const lines = perKey.get(Number(r.key_id)) ?? [];
          if (lines.length < KEPT) lines.push(r);
          perKey.set(Number(r.key_id), lines);
        }
        const chunks = [...perKey].map(([keyId, newestFirst]) => {
          const lines = newestFirst.reverse();
          const body: StoredLine[] = lines.map((l) => [l.at, l.method, l.path, l.status, l.error, l.outcome, Number(l.duration_ms), l.address, l.request_id]);
          return { key_id: keyId, oldest_ms: Date.parse(lines[0]!.at), newest_ms: Date.parse(lines[lines.length - 1]!.at), lines: lines.length, body: JSON.stringify(body) };
        });
        if (chunks.length > 0) await db.insertInto('key_request_log_chunks').values(chunks).execute();
      }
      await db.schema.dropTable('key_request_log').execute();
    },
    async down(db: AnyDb): Promise<void> {
      await createRequestLogTable(db, pg);
      const keys = await keyIdsOf(db, 'key_request_log_chunks');
      for (let i = 0; i < keys.length; i += KEYS_PER_READ) {
        const chunks: Array<{ key_id: number | string; body: string }> = await db
          .selectFrom('key_request_log_chunks')
          .select(['key_id', 'body'])
          .where('key_id', 'in', keys.slice(i, i + KEYS_PER_READ))
          .orderBy('id')
          .execute();
        const rows = chunks.flatMap((c) =>
          (JSON.parse(c.body) as StoredLine[]).map(([at, method, path, status, error, outcome, durationMs, address, requestId]) => ({
            key_id: Number(c.key_id),
            at,
            method,
            path,
            status,
            error,
            outcome,
            duration_ms: durationMs,
            address,
            request_id: requestId,
          })),
        );
        // Under SQLite's limit of bound parameters (10 a row).
        for (let j = 0; j < rows.length; j += 500) await db.insertInto('key_request_log').values(rows.slice(j, j + 500)).execute();
      }
      await db.schema.dropTable('key_request_log_chunks').execute();
    },
  };
}
