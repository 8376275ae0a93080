/**
 * Helpers for the command-line and loader tests: run `shelfapi` from source in a child process, make temp
 * SQLite stores, count every table, build the real app over a store file the CLI writes to, and check a
 * key's checksum independently of src/keys (zlib's CRC-32, base62 written here again).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import assert from 'node:assert/strict';
import { after } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { systemClock, type Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { buildApp, type App } from '../../src/http/app.js';
import { SqliteMeter } from '../../src/metering/sqlite-meter.js';
import { migrateToLatest, openStore, type Store } from '../../src/store/database.js';
import type { Database } from '../../src/store/schema.js';
import { runCli, type CliResult } from './server-process.js';

export const V1 = '/developer/v1';

// One way to run the CLI for every test (test/helpers/server-process.ts): from source, in a clean environment.
export { runCli, type CliResult } from './server-process.js';

/**
 * Runs several independent CLI invocations side by side, at most `limit` at a time (each child loads the
 * whole program: dozens at once only thrash a small machine). Results come back in the order given.
 */
export async function runClis(runs: Array<{ args: string[]; env?: Record<string, string> }>, limit = 4): Promise<CliResult[]> {
  const results: CliResult[] = new Array<CliResult>(runs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < runs.length) {
      const i = next++;
      results[i] = await runCli(runs[i]!.args, runs[i]!.env);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, runs.length) }, worker));
  return results;
}

/** A refused command: non-zero exit, nothing on stdout, exactly one `shelfapi: ` line on stderr; returns it. */
export function assertRefused(result: CliResult, pattern?: RegExp): string {
  assert.notEqual(result.code, 0, `expected a non-zero exit; stdout: ${result.stdout}`);
  assert.equal(result.stdout, '', 'nothing on stdout when refused');
  const lines = result.stderr.split('\n');
  assert.equal(lines.at(-1), '', `stderr ends with a newline: ${JSON.stringify(result.stderr)}`);
  assert.equal(lines.length, 2, `exactly one line on stderr: ${JSON.stringify(result.stderr)}`);
  const line = lines[0]!;
  assert.match(line, /^shelfapi: \S/);
  if (pattern) assert.match(line, pattern);
  return line;
}

/**
 * A file refused for its bad rows (`load`, `import prices` without --json): exit 1, nothing on stdout, on
 * stderr a `shelfapi: ` line saying how many rows were bad, then one per bad row; returns those (prefix cut).
 */
export function assertRefusedRows(result: CliResult, total: number): string[] {
  assert.equal(result.code, 1, `exit 1 expected; stderr: ${result.stderr}`);
  assert.equal(result.stdout, '', 'nothing on stdout when refused');
  const lines = result.stderr.split('\n');
  assert.equal(lines.pop(), '', `stderr ends with a newline: ${JSON.stringify(result.stderr)}`);
  for (const line of lines) assert.match(line, /^shelfapi: \S/);
  assert.equal(lines[0], `shelfapi: ${total} bad ${total === 1 ? 'line' : 'lines'}; nothing written`);
  return lines.slice(1).map((line) => line.slice('shelfapi: '.length));
}

/** A successful --json command: exit 0, nothing on stderr, stdout is exactly one JSON document. */
export function parseJsonOutput(result: CliResult): unknown {
  assert.equal(result.code, 0, `exit 0 expected; stderr: ${result.stderr}`);
  assert.equal(result.stderr, '', 'nothing on stderr');
  return JSON.parse(result.stdout) as unknown;
}

export interface TempDir {
  dir: string;
  /** A fresh SQLite path inside the temp dir. */
  db(name: string): string;
  cleanup(): void;
}

export function tempDir(): TempDir {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-cli-test-'));
  return {
    dir,
    db: (name) => join(dir, `${name}.sqlite`),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Opens (and migrates) the SQLite store at `path`, the same file a CLI child writes to. */
export async function openSqliteStore(path: string): Promise<Store> {
  const store = openStore({ dialect: 'sqlite', path });
  await migrateToLatest(store);
  return store;
}

export const TABLES = [
  'accounts', 'api_keys', 'catalogue_items', 'price_records', 'current_prices', 'collection_items',
  'listings', 'offers', 'transactions', 'burst_events', 'quota_usage', 'key_usage_daily',
] as const satisfies ReadonlyArray<keyof Database>;

/** Row counts of every table of the store. */
export async function tableCounts(store: Store): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES) {
    const row = await store.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

export interface ApiClient {
  app: App;
  get(url: string, key: string, method?: 'GET' | 'HEAD'): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** The real app over an already open store, configured from `env` like the server would be. */
export async function apiOver(store: Store, env: Record<string, string> = {}, clock: Clock = systemClock): Promise<ApiClient> {
  const config = loadConfig({ DATABASE_URL: store.sqlitePath ?? ':memory:', ...env });
  const app = await buildApp({ config, store, meter: new SqliteMeter(store.sqlite!), clock, logger: false });
  await app.ready();
  return {
    app,
    get: (url, key, method = 'GET') => app.inject({ method, url, headers: { authorization: `Bearer ${key}` } }),
    close: () => app.close(),
  };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** docs/contract.md, "Keys", written again for the tests: CRC-32 (zlib) of the body as 6 base62 digits. */
export function expectedChecksum(body: string): string {
  let value = crc32(body) >>> 0;
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[value % 62]! + out;
    value = Math.floor(value / 62);
  }
  assert.equal(value, 0, 'a CRC-32 fits in 6 base62 digits');
  return out;
}

/** Asserts `key` has the form `<prefix>_live_<secret><checksum>` with at least 32 bytes (43 base62 digits) of secret. */
export function assertKeyForm(key: string, prefix: string): void {
  const head = `${prefix}_live_`;
  assert.ok(key.startsWith(head), `key starts with ${head}: ${key}`);
  const tail = key.slice(head.length);
  assert.match(tail, /^[0-9A-Za-z]+$/, 'secret and checksum are base62');
  // 62^43 > 2^256 > 62^42: 32 random bytes need at least 43 base62 digits, then 6 of checksum.
  assert.ok(tail.length >= 43 + 6, `secret of at least 43 base62 digits plus a 6-digit checksum: ${tail.length}`);
  assert.equal(key.slice(-6), expectedChecksum(key.slice(0, -6)), 'checksum is CRC-32 of everything before it');
}

/** The same key with one secret character changed and the checksum left alone: must fail the checksum. */
export function mistype(key: string): string {
  const i = key.length - 10;
  const c = key[i] === 'a' ? 'b' : 'a';
  return key.slice(0, i) + c + key.slice(i + 1);
}

/** A string as an async iterable of chunks, the shape importPrices reads (a file stream in production). */
export async function* chunks(...parts: string[]): AsyncGenerator<string> {
  for (const part of parts) yield part;
}

/** The stored hash of a key, computed here apart from src/keys. */
export const keyHash = (key: string): string => createHash('sha256').update(key).digest('hex');

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A temp directory for one test file's stores; `open` builds the real app over a store file the CLI writes
 * to, and `closeAfter` takes anything else the file opens. All of it is closed and removed after the file.
 */
export function cliWorkspace(): {
  tmp: TempDir;
  open: (path: string, env?: Record<string, string>) => Promise<{ store: Store; api: ApiClient }>;
  closeAfter: <T extends { close(): Promise<void> }>(opened: T) => T;
} {
  const tmp = tempDir();
  const opened: Array<{ close(): Promise<void> }> = [];
  after(async () => {
    // Apps before the stores they read.
    for (const item of opened.reverse()) await item.close();
    tmp.cleanup();
  });
  const closeAfter = <T extends { close(): Promise<void> }>(item: T): T => {
    opened.push(item);
    return item;
  };
  async function open(path: string, env: Record<string, string> = {}): Promise<{ store: Store; api: ApiClient }> {
    const store = closeAfter(await openSqliteStore(path));
    const api = closeAfter(await apiOver(store, env));
    return { store, api };
  }
  return { tmp, open, closeAfter };
}
