/**
 * The stores a run measures, made once and kept (bench/.data, the database shelfapi_bench_<items>_<accounts>):
 * the demo catalogue, BENCH_ACCOUNTS accounts with a key each, and what the scenarios read back of them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { cli, ensureDatabase, log, ROOT } from './bench-support.js';
import { BENCH_ACCOUNTS, DATA, ITEMS, LIMITED_ADDRESSES, PG_ADMIN_URL } from './run-config.js';

export interface Keys {
  demo: string;
  collector: string;
  bench: string[];
}

/**
 * Loads BENCH_ACCOUNTS accounts with one key each (`shelfapi load`), refs and emails numbered from `name`:
 * their ids and keys by ref.
 */
export function loadAccounts(label: string, databaseUrl: string, name: string, scopes: readonly string[]): { accounts: Record<string, number>; keys: Record<string, string> } {
  const file = join(DATA, `${label}-${name === 'bench' ? '' : `${name}-`}accounts.json`);
  const ref = (i: number) => `${name[0]}${i}`;
  writeFileSync(
    file,
    JSON.stringify({
      accounts: Array.from({ length: BENCH_ACCOUNTS }, (_, i) => ({ ref: ref(i), email: `${name}${i}@shelfapi.dev`, plan: 'enthusiast' })),
      keys: Array.from({ length: BENCH_ACCOUNTS }, (_, i) => ({ ref: ref(i), account: ref(i), name, scopes })),
    }),
  );
  return JSON.parse(cli(['load', file, '--json'], { DATABASE_URL: databaseUrl })) as { accounts: Record<string, number>; keys: Record<string, string> };
}

/** Seeds the store once (demo catalogue + collector) and adds bench accounts with a key each. */
export function prepareData(label: string, databaseUrl: string): Keys {
  const marker = join(DATA, `${label}-${ITEMS}-${BENCH_ACCOUNTS}.keys.json`);
  if (existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8')) as Keys;
  const started = Date.now();
  log(`${label}: seeding ${ITEMS.toLocaleString('en-US')} items (once; kept for later runs)`);
  const seeded = JSON.parse(cli(['seed', '--demo', '--items', String(ITEMS), '--json'], { DATABASE_URL: databaseUrl })) as {
    keys: Record<string, string>;
  };
  const loaded = loadAccounts(label, databaseUrl, 'bench', ['catalogue:read', 'prices:read', 'export', 'collection:read', 'marketplace:read', 'transactions:read']);
  const keys: Keys = { demo: seeded.keys.demo!, collector: seeded.keys.collector!, bench: Object.values(loaded.keys) };
  writeFileSync(marker, JSON.stringify(keys));
  log(`${label}: data ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return keys;
}

/**
 * A second set of BENCH_ACCOUNTS accounts with a key each, every key limited to LIMITED_ADDRESSES (through
 * the keys service: bench/limit-keys.ts), made once per store: the item GET over them against the item GET
 * over the bench keys, which have no list, is what a list costs the hot path.
 */
export function prepareLimitedKeys(label: string, databaseUrl: string): string[] {
  const marker = join(DATA, `${label}-${ITEMS}-${BENCH_ACCOUNTS}.limited-keys.json`);
  if (existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8')) as string[];
  const started = Date.now();
  log(`${label}: adding ${BENCH_ACCOUNTS.toLocaleString('en-US')} accounts whose keys have allowed addresses (once; kept for later runs)`);
  const loaded = loadAccounts(label, databaseUrl, 'limited', ['catalogue:read', 'prices:read']);
  const idsFile = join(DATA, `${label}-limited-account-ids.json`);
  writeFileSync(idsFile, JSON.stringify(Object.values(loaded.accounts)));
  execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'limit-keys.ts'), idsFile, LIMITED_ADDRESSES.join(' ')], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const keys = Object.values(loaded.keys);
  writeFileSync(marker, JSON.stringify(keys));
  log(`${label}: limited keys ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return keys;
}

export async function preparePostgres(): Promise<string> {
  const name = process.env.BENCH_DATABASE ?? `shelfapi_bench_${ITEMS}_${BENCH_ACCOUNTS}`;
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`BENCH_DATABASE must be a plain lower-case name, got ${JSON.stringify(name)}`);
  return ensureDatabase(PG_ADMIN_URL, name);
}

export async function readNames(store: string, databaseUrl: string, ids: number[]): Promise<string[]> {
  return readColumn(store, databaseUrl, `select name from catalogue_items where status = 'PUBLISHED' and master_item_id in (${ids.join(',')})`);
}

/** The ids of the published items: the item GET scenarios ask for these only, so every answer is a 200. */
export async function publishedIds(store: string, databaseUrl: string): Promise<number[]> {
  const ids = await readColumn(store, databaseUrl, `select master_item_id from catalogue_items where status = 'PUBLISHED' order by master_item_id`);
  return ids.map(Number);
}

export async function readColumn(store: string, databaseUrl: string, sqlText: string): Promise<string[]> {
  if (store === 'sqlite') {
    const db = new SqliteDatabase(databaseUrl, { readonly: true });
    try {
      return (db.prepare(sqlText).pluck().all() as unknown[]).map(String);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<Record<string, unknown>>(sqlText)).rows.map((r) => String(Object.values(r)[0]));
  } finally {
    await client.end();
  }
}
