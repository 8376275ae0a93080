/**
 * Answers kept for one data version at a time, the generation that item answers (item-answers.ts) and
 * list answers (routes/list-answers.ts) share. Every load and import bumps the data version in its own
 * transaction and every request reads that version first, so an answer is served only to a request that
 * read the version it was made at, and no answer outlives its data on any server.
 *
 * A request at a newer version empties the cache and starts the new generation; a request at an older
 * version (it read the version just before a write landed) computes its answer and keeps nothing, as does
 * a request with no version (none was read). An answer is computed after its version was read, so an
 * answer kept under a version is never older than that version. A computation that fails is not kept.
 */
import { LRUCache } from 'lru-cache';

/** Which answers, once computed, are worth keeping (all unless told). */
export interface KeepRule<K> {
  keeps(key: K): boolean;
  /** A new generation starts: forget what was seen. */
  clear(): void;
}

export interface VersionedAnswersOptions<K extends string | number, V extends object> {
  /** The bound of the generation (entries, size); past it the least recently used go. */
  bound: LRUCache.Options<K, V, unknown>;
  keepRule?: KeepRule<K>;
  /**
   * Requests asking for a key whose answer is being computed share that computation (fifty first requests
   * of one list page would otherwise run its query fifty times over and queue for the scan slots).
   */
  shareComputations?: boolean;
}

export class VersionedAnswers<K extends string | number, V extends object> {
  #version = -1;
  /** The generation's bound on what requests keep, when lower than the cache's own (limitKeptSize). */
  #keptSizeLimit = Number.POSITIVE_INFINITY;
  readonly #entries: LRUCache<K, V>;
  readonly #pending = new Map<K, Promise<V>>();

  constructor(private readonly options: VersionedAnswersOptions<K, V>) {
    this.#entries = new LRUCache<K, V>(options.bound);
  }

  /** The answer for `key` at data version `version` (just read by the caller): kept, being computed, or computed now. */
  async answer(version: number | null, key: K, compute: () => Promise<V>): Promise<V> {
    if (version === null || version < this.#version) return compute();
    if (version === this.#version) {
      const kept = this.#entries.get(key);
      if (kept !== undefined) return kept;
    } else {
      this.#entries.clear();
      this.#pending.clear();
      this.options.keepRule?.clear();
      this.#keptSizeLimit = Number.POSITIVE_INFINITY;
      this.#version = version;
    }
    if (!this.options.shareComputations) {
      const answer = await compute();
      this.#keep(version, key, answer);
      return answer;
    }
    const shared = this.#pending.get(key);
    if (shared !== undefined) return shared;
    const computing = compute();
    this.#pending.set(key, computing);
    try {
      const answer = await computing;
      this.#keep(version, key, answer);
      return answer;
    } finally {
      if (this.#pending.get(key) === computing) this.#pending.delete(key);
    }
  }

  #keep(version: number, key: K, answer: V): void {
    if (this.#version !== version) return;
    if (this.options.keepRule !== undefined && !this.options.keepRule.keeps(key)) return;
    this.#entries.set(key, answer);
    // The answer just kept is the most recently used: the least recently used go first.
    while (this.#entries.calculatedSize > this.#keptSizeLimit && this.#entries.size > 1) this.#entries.pop();
  }

  /**
   * From now until the generation of `version` ends, what requests keep stays within `size` (as the
   * bound's sizeCalculation counts it), the least recently used going first; answers a prime keeps
   * (keepUnlessHeld) are not limited. Does nothing once that generation has ended.
   */
  limitKeptSize(version: number, size: number): void {
    if (this.#version === version) this.#keptSizeLimit = size;
  }

  /** The data version of the generation held; -1 before the first. */
  get version(): number {
    return this.#version;
  }

  /**
   * Keeps `answer` for `key` in the generation of `version`, whatever the keep rule says, unless that
   * generation has ended or `key` holds an answer already: one a request kept is as fresh as this one, and
   * replacing it would only churn. The caller read `answer`'s data after it read `version`. True when kept.
   */
  keepUnlessHeld(version: number, key: K, answer: V): boolean {
    if (this.#version !== version || this.#entries.has(key)) return false;
    this.#entries.set(key, answer);
    return true;
  }

  /** Answers held. */
  get count(): number {
    return this.#entries.size;
  }

  /** The size held, as the bound's sizeCalculation counts it. */
  get calculatedSize(): number {
    return this.#entries.calculatedSize;
  }
}

/**
 * Keeps an id's answer from its second request at a version on: ids asked once (a scan of the catalogue)
 * would each be kept only to be pushed out again, which costs more than it saves. The ids seen are a fixed
 * table of numbers, one id a slot: two ids that share a slot only delay each other's keeping.
 */
export class SecondRequestOfId implements KeepRule<number> {
  /** Ids asked for once at this version, whose answers were not kept: slot `id & mask`, NaN when empty. */
  readonly #seen: Float64Array;
  readonly #mask: number;

  constructor(slotsLog2 = 16) {
    this.#seen = new Float64Array(1 << slotsLog2).fill(Number.NaN);
    this.#mask = (1 << slotsLog2) - 1;
  }

  keeps(id: number): boolean {
    const slot = id & this.#mask;
    if (this.#seen[slot] !== id) {
      this.#seen[slot] = id;
      return false;
    }
    this.#seen[slot] = Number.NaN;
    return true;
  }

  clear(): void {
    this.#seen.fill(Number.NaN);
  }
}
