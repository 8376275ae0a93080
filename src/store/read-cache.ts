/**
 * Answers that cost a scan (list totals, collection values), kept per data version. Each lookup reads the
 * version from the store first (one primary-key read): a load or import anywhere bumps it, so a cached
 * answer is never served for data that changed, on any server.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

const MAX_ENTRIES = 10_000;

export class ReadCache {
  private version = -1;
  private readonly entries = new Map<string, unknown>();

  constructor(private readonly currentVersion: () => Promise<number>) {}

  async get<T>(key: string, compute: () => Promise<T>): Promise<T> {
    const version = await this.currentVersion();
    if (version !== this.version) {
      this.entries.clear();
      this.version = version;
    }
    if (this.entries.has(key)) return this.entries.get(key) as T;
    const value = await compute();
    // Stored only if the data did not change meanwhile; oldest entries leave first.
    if (this.version === version) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, value);
    }
    return value;
  }
}

/** Marks the served data as changed; call inside the writing transaction. */
export async function bumpDataVersion(db: Kysely<Database>): Promise<void> {
  await sql`update data_version set version = version + 1 where id = 1`.execute(db);
}
