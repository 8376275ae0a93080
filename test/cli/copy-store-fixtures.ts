/**
 * Shared by the copy-store suites (copy-store-traffic and copy-store-cli .test.ts): the file's workspace
 * (temporary files, and what was opened, closed after the file), the fixture's key prefix, Redis prefixes of
 * the file's own, fresh PostgreSQL targets, and what tells that a target or a source was left as it was.
 * useCopyStoreWorkspace() registers the hooks that clean up after the file and sets tmp and closeAfter.
 */
import { after } from 'node:test';
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { openStore } from '../../src/store/database.js';
import { cliWorkspace } from '../helpers/cli-helpers.js';
import { freshPostgresSchema, TEST_REDIS_URL } from '../helpers/test-app.js';

type Workspace = ReturnType<typeof cliWorkspace>;
export let tmp: Workspace['tmp'];
export let closeAfter: Workspace['closeAfter'];

export const KEY_PREFIX = 'shelf';

/** Every Redis key of this file goes under a prefix of its own, deleted after. */
const redisPrefixes: string[] = [];
export function redisPrefix(): string {
  const prefix = `test:copy:${randomUUID()}:`;
  redisPrefixes.push(prefix);
  return prefix;
}
export async function redisKeys(prefix: string): Promise<string[]> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      keys.push(...found);
      cursor = next;
    } while (cursor !== '0');
    return keys;
  } finally {
    redis.disconnect();
  }
}

/** The file's workspace, and its Redis keys deleted after it. */
export function useCopyStoreWorkspace(): void {
  ({ tmp, closeAfter } = cliWorkspace());
  after(async () => {
    const redis = new Redis(TEST_REDIS_URL);
    for (const prefix of redisPrefixes) for (const key of await redisKeys(prefix)) await redis.del(key);
    redis.disconnect();
  });
}

/** A fresh schema of the test database, dropped after the file (once what was opened on it is closed). */
export async function freshTarget(): Promise<string> {
  const schema = await freshPostgresSchema();
  closeAfter({ close: schema.drop });
  return schema.url;
}

/** Tables of the target's schema: none when nothing was written (not even migrated). */
export async function targetTableCount(url: string): Promise<number> {
  const store = openStore({ dialect: 'postgres', url });
  try {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = current_schema()`.execute(store.db);
    return rows[0]!.n;
  } finally {
    await store.close();
  }
}

export const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
