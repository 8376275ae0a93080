/**
 * Answers that cost a scan (list totals, collection values), kept per data version. Each lookup reads the
 * version from the store first (one primary-key read): a load or import anywhere bumps it, so a cached
 * answer is never served for data that changed, on any server.
 */
import { sql, type Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Database } from './schema.js';

/** Answers kept per data version; past it the least recently used go, so the totals asked for often stay. */
const MAX_ENTRIES = 10_000;

export class ReadCache {
  private version = -1;
  /**
   * Answers by key, as promises: requests asking for the same total while it is being computed share that
   * one computation (on a million rows, fifty concurrent first hits of one search would otherwise run the
   * same count fifty times over and starve every other query).
   */
  private readonly entries = new LRUCache<string, Promise<unknown>>({ max: MAX_ENTRIES });

  constructor(private readonly currentVersion: () => Promise<number>) {}

  async get<T>(key: string, compute: () => Promise<T>): Promise<T> {
    const version = await this.currentVersion();
    // A request that read the version just before a write landed computes for itself, keeping nothing.
    if (version < this.version) return compute();
    if (version !== this.version) {
      this.entries.clear();
      this.version = version;
    }
    const known = this.entries.get(key);
    if (known !== undefined) return known as Promise<T>;
    const pending = compute();
    this.entries.set(key, pending);
    // A failed computation is not kept: the next request tries again. (peek: looking does not make it recent.)
    pending.catch(() => {
      if (this.entries.peek(key) === pending) this.entries.delete(key);
    });
    return pending;
  }
}

/** The served data's version (one primary-key read), as a query to run, prepare or nest as a subquery. */
export function dataVersionQuery(db: Kysely<Database>) {
  return db.selectFrom('data_version').select('version').where('id', '=', 1);
}

/** Marks the served data as changed; call inside the writing transaction. */
export async function bumpDataVersion(db: Kysely<Database>): Promise<void> {
  await sql`update data_version set version = version + 1 where id = 1`.execute(db);
}
