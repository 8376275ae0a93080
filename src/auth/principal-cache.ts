/**
 * The key lookup of every request, held per server: a key's row (its scopes, expiry, stop time and its
 * account's plan) stays in memory, and each request reads only the account's access version, by primary
 * key, instead of joining the key to its account. The database bumps that version on every change the
 * row could show (migration 0008's triggers: revoke, roll, scope change, plan change, from any writer), so a
 * request that starts after such a change commits finds a new version and reads the row again: the
 * next-request rule holds on every server. Times (expiry, a rolled key's stop time) are compared with the
 * clock on each request by authenticate, so a key still stops at its exact time with no bump.
 *
 * Fails closed: when the version cannot be read, the error goes up (503) and nothing is served from memory.
 * Unknown keys are not held: a key made later is found by the next lookup, and guessed keys fill nothing.
 *
 * The check is a primary-key read of accounts alone: any join with api_keys is at the mercy of its planner
 * statistics (docs/performance.md). The same statement reads the store's data version (another primary-key
 * read), which the request keeps: item and price answers are held per data version, and this costs them no
 * round trip of their own. A deleted key bumps its account; a deleted account's id, if reused,
 * starts above every version the deleted one had (migration 0008).
 *
 * On SQLite and on PostgreSQL + Redis the version is not read here on every request: `held()` gives the
 * principal held, unchecked, and the meter's admission checks its version against the account's, in the
 * same step as the admission (SQLite: in its transaction, sqlite-meter.ts; Redis: in its script,
 * redis-access-versions.ts); when they differ the pipeline calls `find`, which reads the database as above.
 * So `find` with its version read serves PostgreSQL without Redis, and a key's first request elsewhere.
 */
import { LRUCache } from 'lru-cache';
import type { KeyWithVersions, StoreVersions } from '../store/hot-queries.js';
import type { KeyWithAccount } from '../store/repositories/api-key.repository.js';

export interface KeyLookup {
  /** The key's row with its account's access version and the store's data version, in one statement. */
  keyByHash(hash: string): Promise<KeyWithVersions | undefined>;
  /** The account's access version and the store's data version, in one statement. */
  versions(accountId: number): Promise<StoreVersions>;
}

/** What a lookup found: the key's current row (undefined for an unknown key) and the data version read with it. */
export interface FoundKey {
  key: KeyWithAccount | undefined;
  /** Null when no row was read (an unknown key): no version was read either. */
  dataVersion: number | null;
}

const UNKNOWN: FoundKey = Object.freeze({ key: undefined, dataVersion: null });

/** Enough for every key in use on a server; past it the least recently used goes first. */
export const PRINCIPAL_CACHE_ENTRIES = 10_000;

export class PrincipalCache {
  readonly #entries: LRUCache<string, KeyWithAccount>;
  /** Bumped by clear(): a row read before a clear is not held after it (it may predate a change missed). */
  #generation = 0;

  constructor(
    private readonly lookup: KeyLookup,
    maxEntries = PRINCIPAL_CACHE_ENTRIES,
  ) {
    this.#entries = new LRUCache<string, KeyWithAccount>({ max: maxEntries });
  }

  /** The key's row as the store has it now: from memory when the account's access version is unchanged. */
  readonly find = async (keyHash: string): Promise<FoundKey> => {
    const generation = this.#generation;
    const held = this.#entries.get(keyHash);
    if (held !== undefined) {
      const versions = await this.lookup.versions(held.accountId);
      if (versions.accessVersion === held.accessVersion) return { key: held, dataVersion: versions.dataVersion };
      this.#entries.delete(keyHash);
    }
    // One statement reads the row and the version together, so the version held is the row's own: a change
    // committed after the read bumps past it.
    const row = await this.lookup.keyByHash(keyHash);
    if (row === undefined) return UNKNOWN;
    const { dataVersion, ...entry } = row;
    if (generation === this.#generation) this.#entries.set(keyHash, entry);
    return { key: entry, dataVersion };
  };

  /** The row held for the key, unchecked (its account's version is checked by the caller), or undefined. */
  held(keyHash: string): KeyWithAccount | undefined {
    return this.#entries.get(keyHash);
  }

  /** Drops every held row: the next request of each key reads it again. */
  clear(): void {
    this.#generation++;
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
