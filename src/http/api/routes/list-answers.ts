/**
 * Answers of the filtered lists (catalogue, prices) as they were sent: the serialized body and its strong
 * ETag, kept per data version. The same search or list page asked again answers without the index, the
 * store, the serializer or the hash: its rows change only with a load or an import, which bump the data
 * version (read-cache.ts), and every request reads the version first, so no answer outlives its data on
 * any server.
 */
import { LRUCache } from 'lru-cache';
import type { SerializedBody } from './define-route.js';

export interface ListAnswer {
  body: SerializedBody;
  etag: string;
}

/** Characters of bodies kept per server (a page of 100 items is about 40,000): past it the least recently used go. */
const MAX_CHARACTERS = 32 * 2 ** 20;

export class ListAnswers {
  private version = -1;
  private readonly entries = new LRUCache<string, ListAnswer>({
    maxSize: MAX_CHARACTERS,
    sizeCalculation: (answer, key) => answer.body.length + answer.etag.length + key.length,
  });
  /**
   * Answers being computed: requests asking for the same page meanwhile share the computation (fifty first
   * requests of one page would otherwise run its query fifty times over and queue for the scan slots).
   */
  private readonly pending = new Map<string, Promise<ListAnswer>>();

  /** The answer for `key` at data version `version` (just read by the caller): kept, being computed, or computed now. */
  async answer(version: number, key: string, compute: () => Promise<ListAnswer>): Promise<ListAnswer> {
    if (version === this.version) {
      const kept = this.entries.get(key);
      if (kept !== undefined) return kept;
    }
    // Read just before a write landed: the answer may hold older data than the current version; keep nothing.
    if (version < this.version) return compute();
    if (version > this.version) {
      this.entries.clear();
      this.pending.clear();
      this.version = version;
    }
    const shared = this.pending.get(key);
    if (shared !== undefined) return shared;
    const computing = compute();
    this.pending.set(key, computing);
    try {
      const answer = await computing;
      if (this.version === version) this.entries.set(key, answer);
      return answer;
    } finally {
      // A failed computation is not kept: the next request tries again.
      if (this.pending.get(key) === computing) this.pending.delete(key);
    }
  }

  /** Characters held (bodies, tags and keys), for tests and the bench. */
  get size(): number {
    return this.entries.calculatedSize;
  }
}
