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
 * statistics (docs/performance.md). A deleted key bumps its account; a deleted account's id, if reused,
 * starts above every version the deleted one had (migration 0008).
 */
import { LRUCache } from 'lru-cache';
import type { KeyWithAccount } from '../store/repositories/api-key.repository.js';

export interface KeyLookup {
  keyByHash(hash: string): Promise<KeyWithAccount | undefined>;
  /** The account's access version; undefined when the account is gone. */
  accessVersion(accountId: number): Promise<number | undefined>;
}

/** Enough for every key in use on a server; past it the least recently used goes first. */
export const PRINCIPAL_CACHE_ENTRIES = 10_000;

export class PrincipalCache {
  readonly #entries: LRUCache<string, KeyWithAccount>;

  constructor(
    private readonly lookup: KeyLookup,
    maxEntries = PRINCIPAL_CACHE_ENTRIES,
  ) {
    this.#entries = new LRUCache<string, KeyWithAccount>({ max: maxEntries });
  }

  /** The key's row as the store has it now: from memory when the account's access version is unchanged. */
  readonly find = async (keyHash: string): Promise<KeyWithAccount | undefined> => {
    const held = this.#entries.get(keyHash);
    if (held !== undefined) {
      if ((await this.lookup.accessVersion(held.accountId)) === held.accessVersion) return held;
      this.#entries.delete(keyHash);
    }
    // One statement reads the row and the version together, so the version held is the row's own: a change
    // committed after the read bumps past it.
    const row = await this.lookup.keyByHash(keyHash);
    if (row === undefined) return undefined;
    const entry = { ...row, accessVersion: Number(row.accessVersion) };
    this.#entries.set(keyHash, entry);
    return entry;
  };

  get size(): number {
    return this.#entries.size;
  }
}
