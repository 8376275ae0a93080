/**
 * Answers of the filtered lists (catalogue, prices) as they were sent: the serialized body and its strong
 * ETag, kept per data version (one generation at a time, versioned-answers.ts). The same search or list
 * page asked again answers without the index, the store, the serializer or the hash: its rows change only
 * with a load or an import, which bump the data version (read-cache.ts). Requests asking for a page being
 * computed share that computation.
 */
import { VersionedAnswers } from '../versioned-answers.js';
import type { SerializedBody } from './define-route.js';

export interface ListAnswer {
  body: SerializedBody;
  etag: string;
}

/** Characters of bodies kept per server (a page of 100 items is about 40,000): past it the least recently used go. */
const MAX_CHARACTERS = 32 * 2 ** 20;

export class ListAnswers {
  readonly #answers = new VersionedAnswers<string, ListAnswer>({
    bound: {
      maxSize: MAX_CHARACTERS,
      sizeCalculation: (answer, key) => answer.body.length + answer.etag.length + key.length,
    },
    shareComputations: true,
  });

  /** The answer for `key` at data version `version` (just read by the caller): kept, being computed, or computed now. */
  answer(version: number, key: string, compute: () => Promise<ListAnswer>): Promise<ListAnswer> {
    return this.#answers.answer(version, key, compute);
  }

  /** Characters held (bodies, tags and keys), for tests and the bench. */
  get size(): number {
    return this.#answers.calculatedSize;
  }
}
