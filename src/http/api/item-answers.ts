/**
 * Single-item answers (`/catalogue/:id`, `/prices/:masterItemId`) held per data version (one generation
 * at a time, versioned-answers.ts): the serialized body and its strong ETag, or the fact that there is no
 * such item (its 404). Each request reads the data version with its key check (principal-cache.ts).
 *
 * Bounded by entries and by bytes; past either the least recently used go first. On SQLite an answer is
 * kept from its id's second request at a version on (SecondRequestOfId): keeping ids asked once costs the
 * copy into the old generation and the eviction, about 2 µs a request measured on uniform ids, more than an
 * SQLite read saves. On PostgreSQL a read is a round trip (about 100 µs of the process's CPU,
 * docs/performance.md), so every answer is kept from its first request.
 */
import type { FastifyReply } from 'fastify';
import { strongEtag } from './conditional.js';
import type { SerializedBody } from './routes/define-route.js';
import { SecondRequestOfId, VersionedAnswers } from './versioned-answers.js';

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
export const ITEM_ANSWER_BYTES = 16 * 1024 * 1024;

export class ItemAnswers<Row> {
  readonly #answers: VersionedAnswers<number, Held>;

  constructor(
    private readonly read: (id: number) => Promise<Row | undefined>,
    limits: { entries: number; bytes: number } = { entries: ITEM_ANSWER_ENTRIES, bytes: ITEM_ANSWER_BYTES },
    /** Keep answers from an id's first request (PostgreSQL), not its second (SQLite). */
    keepFromFirstRequest = false,
  ) {
    this.#answers = new VersionedAnswers<number, Held>({
      bound: {
        max: limits.entries,
        maxSize: limits.bytes,
        // Characters, not bytes: V8 keeps a string of Latin-1 characters at one byte each.
        sizeCalculation: (held) => ('body' in held ? held.body.length : 0) + ENTRY_OVERHEAD,
      },
      ...(keepFromFirstRequest ? {} : { keepRule: new SecondRequestOfId() }),
    });
  }

  /**
   * The answer for `id` as of `dataVersion`, null when there is no such item. `serialize` writes the body
   * (the route's own serializer, so the bytes are those Fastify would send).
   */
  async answer(dataVersion: number | null, id: number, serialize: (row: Row) => unknown): Promise<ItemAnswer | null> {
    const held = await this.#answers.answer(dataVersion, id, async () => {
      const row = await this.read(id);
      if (row === undefined) return NOT_FOUND;
      const body = serialize(row);
      // Fastify's JSON serializers write strings; anything else could not be kept and sent as it is.
      if (typeof body !== 'string') throw new Error('item-answers: the serializer did not write a string');
      return { body, etag: strongEtag(body) };
    });
    return 'body' in held ? held : null;
  }

  get size(): number {
    return this.#answers.count;
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
