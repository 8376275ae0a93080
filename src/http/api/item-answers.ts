/**
 * Single-item answers (`/catalogue/:id`, `/prices/:masterItemId`) held per data version: the serialized
 * body and its strong ETag, or the fact that there is no such item (its 404). Every load and import bumps
 * the data version in its own transaction, and each request reads that version with its key check
 * (principal-cache.ts), so an answer is served only to a request that read the version it was made at.
 *
 * One generation at a time, as in the read cache (store/read-cache.ts): a request at a newer version
 * empties the cache and starts the new one; a request at an older version (it read the version just
 * before an import landed) reads the store and keeps nothing. A request's row is read after its version,
 * so an answer kept under a version is never older than that version: a request at a newer version never
 * gets an older body. A request with no version (none was read) is answered from the store every time.
 *
 * Bounded by entries and by bytes; past either the least recently used go first. An answer is kept from
 * its id's second request at a version on: ids asked once (a scan of the catalogue) would each be kept
 * only to be pushed out again, which costs more than it saves (the copy into the old generation and
 * the eviction, about 2 µs a request measured on uniform ids). The ids seen are a fixed table of numbers,
 * one id a slot: two ids that share a slot only delay each other's keeping.
 */
import type { FastifyReply } from 'fastify';
import { LRUCache } from 'lru-cache';
import { strongEtag } from './conditional.js';
import type { SerializedBody } from './routes/define-route.js';

export interface ItemAnswer {
  /** The body exactly as the route's serializer writes it. */
  body: string;
  etag: string;
}

/** What the cache holds for an id: its answer, or that the item does not exist at this version. */
type Held = ItemAnswer | typeof NOT_FOUND;
const NOT_FOUND = Object.freeze({ notFound: true as const });

/** About 200 bytes an answer beyond its body's characters: the key, the tag, the entry and the cache's slots. */
const ENTRY_OVERHEAD = 200;

/**
 * Per cache (items, prices): about 20,000 item answers of the demo catalogue (520-byte bodies), so the two
 * together stay near 32 MB of the heap. A client reading the same items again gets them from here; a
 * uniform scan of a million ids would miss at any size a server can spare.
 */
export const ITEM_ANSWER_ENTRIES = 50_000;
const SEEN_SLOTS = 1 << 16;
const SEEN_MASK = SEEN_SLOTS - 1;
export const ITEM_ANSWER_BYTES = 16 * 1024 * 1024;

export class ItemAnswers<Row> {
  #version = -1;
  readonly #entries: LRUCache<number, Held>;
  /** Ids asked for once at this version, whose answers were not kept: slot `id & SEEN_MASK`, NaN when empty. */
  readonly #seen = new Float64Array(SEEN_SLOTS).fill(Number.NaN);

  constructor(
    private readonly read: (id: number) => Promise<Row | undefined>,
    limits: { entries: number; bytes: number } = { entries: ITEM_ANSWER_ENTRIES, bytes: ITEM_ANSWER_BYTES },
  ) {
    this.#entries = new LRUCache<number, Held>({
      max: limits.entries,
      maxSize: limits.bytes,
      // Characters, not bytes: V8 keeps a string of Latin-1 characters at one byte each.
      sizeCalculation: (held) => ('body' in held ? held.body.length : 0) + ENTRY_OVERHEAD,
    });
  }

  /**
   * The answer for `id` as of `dataVersion`, null when there is no such item. `serialize` writes the body
   * (the route's own serializer, so the bytes are those Fastify would send).
   */
  async answer(dataVersion: number | null, id: number, serialize: (row: Row) => unknown): Promise<ItemAnswer | null> {
    if (dataVersion !== null && dataVersion === this.#version) {
      const held = this.#entries.get(id);
      if (held !== undefined) return 'body' in held ? held : null;
    }
    const row = await this.read(id);
    let answer: ItemAnswer | null = null;
    if (row !== undefined) {
      const body = serialize(row);
      // Fastify's JSON serializers write strings; anything else could not be kept and sent as it is.
      if (typeof body !== 'string') throw new Error('item-answers: the serializer did not write a string');
      answer = { body, etag: strongEtag(body) };
    }
    this.#keep(dataVersion, id, answer ?? NOT_FOUND);
    return answer;
  }

  #keep(dataVersion: number | null, id: number, held: Held): void {
    if (dataVersion === null || dataVersion < this.#version) return;
    if (dataVersion > this.#version) {
      this.#entries.clear();
      this.#seen.fill(Number.NaN);
      this.#version = dataVersion;
    }
    const slot = id & SEEN_MASK;
    if (this.#seen[slot] !== id) {
      this.#seen[slot] = id;
      return;
    }
    this.#seen[slot] = Number.NaN;
    this.#entries.set(id, held);
  }

  get size(): number {
    return this.#entries.size;
  }
}

/**
 * The answer as the reply's body, with the headers Fastify and the pipeline would give the same object: a
 * string with a JSON content type that carries its charset is sent as it is, not serialized again
 * (fastify/lib/reply.js, Reply.prototype.send), and the onSend hook keeps an ETag already set.
 */
export function answerBody(reply: FastifyReply, answer: ItemAnswer): SerializedBody {
  reply.header('content-type', 'application/json; charset=utf-8').header('etag', answer.etag);
  return answer.body as SerializedBody;
}
