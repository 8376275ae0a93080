/**
 * What a statistics flush's rows cost SQLite alone, without a server: for KEYS keys (default 2,000, the
 * tenants scenario's accounts), each key's rows as a busy flush writes them (the hour's endpoint, three
 * server-time buckets and outcome bucket, the day's outcome count), upserted in one transaction, TIMES over,
 * best of five; in µs a key. Each variant runs on a fresh copy of the store:
 *
 *   as written                  what the flush writes today (the days are made from the hours at the purge)
 *   with day rows               the day's endpoint and server-time rows too, as every flush wrote them before,
 *                               the account day totals' triggers firing for them
 *   with day rows, no triggers  the same, the triggers that keep account_usage_days dropped
 *
 *   node --import tsx bench/stats-flush-rows.ts    (STORE_FILE=bench/.data/bench-20000-10000.sqlite, seeded by
 *                                                   BENCH_ONLY=tenants npm run bench; KEYS=2000; TIMES=10)
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/database.js';
import { prepareRowStatements } from '../src/usage-stats/database-usage-stats-statements.js';
import { ROOT } from './bench-support.js';

const STORE_FILE = process.env.STORE_FILE ?? join(ROOT, 'bench', '.data', 'bench-20000-10000.sqlite');
const KEYS = Number(process.env.KEYS ?? 2000);
const TIMES = Number(process.env.TIMES ?? 10);
const VARIANTS = ['as written', 'with day rows', 'with day rows, no triggers'] as const;

async function measure(file: string, variant: (typeof VARIANTS)[number]): Promise<number> {
  const store = openStore({ dialect: 'sqlite', path: file });
  const conn = store.sqlite!;
  try {
    if (variant === 'with day rows, no triggers') {
      const triggers = conn.prepare(`select name from sqlite_master where type = 'trigger' and sql like '%account_usage_days%'`).all() as Array<{ name: string }>;
      for (const { name } of triggers) conn.exec(`drop trigger "${name}"`);
    }
    const keys = (conn.prepare('select id from api_keys order by id limit ?').all(KEYS) as Array<{ id: number }>).map((r) => r.id);
    // The flush's own statements (database-usage-stats.ts), as it prepares them.
    const { bucket, outcome } = prepareRowStatements(store.db, conn);
    const now = new Date().toISOString();
    const [hour, day] = [now.slice(0, 13), now.slice(0, 10)];
    const fields = ['e:/catalogue/{id}', 's:3', 's:4', 's:5'];
    const flush = conn.transaction(() => {
      for (const key of keys) {
        for (const field of fields) {
          bucket.run(key, hour, field, 1);
          if (variant !== 'as written') bucket.run(key, day, field, 1);
        }
        bucket.run(key, hour, 'o:counted', 1);
        outcome.run(key, day, 'counted', 1);
      }
    });
    flush(); // the rows made; what follows updates them, as a busy second's flushes do
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 5; round++) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < TIMES; i++) flush();
      best = Math.min(best, Number(process.hrtime.bigint() - started) / 1000 / (TIMES * keys.length));
    }
    return best;
  } finally {
    await store.close();
  }
}

if (!existsSync(STORE_FILE)) throw new Error(`${STORE_FILE}: no store (BENCH_ONLY=tenants npm run bench seeds it)`);
const dir = mkdtempSync(join(tmpdir(), 'shelfapi-stats-rows-'));
try {
  for (const [i, variant] of VARIANTS.entries()) {
    const file = join(dir, `${i}.sqlite`);
    copyFileSync(STORE_FILE, file);
    // A server may have left committed pages in the WAL.
    if (existsSync(`${STORE_FILE}-wal`)) copyFileSync(`${STORE_FILE}-wal`, `${file}-wal`);
    console.log(`${variant}: ${(await measure(file, variant)).toFixed(1)} µs a key`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
