/**
 * CPU time of the SQLite meter's admission alone (SqliteMeter.admit, group commit included), per admission:
 * ACCOUNTS accounts with a key each (default 10,000), admissions of random accounts on a clock that moves
 * on STEP_MS per admission (default 0.25 ms, 4,000 a second), asked for in batches of BATCH at once
 * (default 1: one admission per transaction; ~30 is what 50 connections give), quota counted, perMinute
 * PER_MINUTE (default 120), after WARMUP admissions (default 20,000; 60 s of the clock fills the windows).
 * Prints the CPU microseconds per admission of each run; run it against two trees in turn to compare.
 *
 *   node --import tsx bench/meter-admission.ts         (ADMISSIONS=40000, RUNS=3; TREE=<other worktree>)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomAdmissions } from './bench-support.js';

const TREE = resolve(process.env.TREE ?? join(import.meta.dirname, '..'));
const ACCOUNTS = Number(process.env.ACCOUNTS ?? 10_000);
const BATCH = Number(process.env.BATCH ?? 1);
const ADMISSIONS = Number(process.env.ADMISSIONS ?? 40_000);
const RUNS = Number(process.env.RUNS ?? 3);
const STEP_MS = Number(process.env.STEP_MS ?? 0.25);
const PER_MINUTE = Number(process.env.PER_MINUTE ?? 120);
const WARMUP = Number(process.env.WARMUP ?? Math.min(ADMISSIONS, 20_000));

type Mod = Record<string, unknown>;
const load = (path: string): Promise<Mod> => import(pathToFileURL(join(TREE, path)).href) as Promise<Mod>;

const database = await load('src/store/database.ts');
const meterModule = await load('src/metering/sqlite-meter.ts');
const openStore = database.openStore as (c: { dialect: 'sqlite'; path: string }) => {
  sqlite: import('better-sqlite3').Database;
  close(): Promise<void>;
};
const migrateToLatest = database.migrateToLatest as (store: unknown) => Promise<string[]>;
const SqliteMeter = meterModule.SqliteMeter as new (conn: import('better-sqlite3').Database) => {
  admit(r: unknown): Promise<unknown>;
};

const dir = mkdtempSync(join(tmpdir(), 'meter-admission-'));
try {
  const store = openStore({ dialect: 'sqlite', path: join(dir, 'meter.sqlite') });
  await migrateToLatest(store);
  const conn = store.sqlite;
  const created = new Date(0).toISOString();
  conn.transaction(() => {
    const account = conn.prepare("INSERT INTO accounts (id, email, plan, plan_status, created_at) VALUES (?, ?, 'enthusiast', 'active', ?)");
    const key = conn.prepare("INSERT INTO api_keys (id, account_id, name, key_hash, last_four, scopes, created_at) VALUES (?, ?, 'k', ?, 'abcd', '[]', ?)");
    for (let id = 1; id <= ACCOUNTS; id++) {
      account.run(id, `a${id}@example.com`, created);
      key.run(id, id, `hash${id}`, created);
    }
  })();
  const meter = new SqliteMeter(conn);
  const limits = { monthly: 1_000_000_000, perMinute: PER_MINUTE };
  const admitSome = randomAdmissions({ accounts: ACCOUNTS, batch: BATCH, stepMs: STEP_MS, start: Date.parse('2026-11-10T00:00:00Z') }, (id, now) =>
    meter.admit({ accountId: id, keyId: id, limits, quota: true, now }),
  );
  await admitSome(WARMUP); // statements, pages, and windows filled (60 s of the clock fills them)
  for (let run = 0; run < RUNS; run++) {
    const before = process.cpuUsage();
    await admitSome(ADMISSIONS);
    const used = process.cpuUsage(before);
    const us = (used.user + used.system) / ADMISSIONS;
    process.stdout.write(`${TREE} batch=${BATCH} accounts=${ACCOUNTS} perMinute=${PER_MINUTE}: ${us.toFixed(2)} µs CPU/admission\n`);
  }
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
