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
 *
 * Given a way to read the whole resource (ItemPriming), a generation's first request also starts its prime
 * (answer-priming.ts): when the resource fits, every answer is read in the background and kept directly,
 * on SQLite too (a generation holding the whole catalogue has nothing to churn).
 */
import type { FastifyReply } from 'fastify';
import { PRIMED_SHARE, primeAnswers, type ItemPriming, type PrimeOutcome } from './answer-priming.js';
import { strongEtag } from './conditional.js';
import type { SerializedBody } from './routes/define-route.js';
import { SecondRequestOfId, VersionedAnswers } from './versioned-answers.js';

export interface ItemAnswer {
  /** The body exactly as the route's serializer writes it. */
  body: string;
  etag: string;
}

export interface ItemAnswerLimits {
  entries: number;
  bytes: number;
  /** What requests keep of a catalogue too large to prime (UNPRIMED_KEPT_BYTES unless given). */
  unprimedKeptBytes?: number;
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

/**
 * Of a catalogue too large to prime, what requests keep stays within this (about 5,000 demo answers: a hot
 * set). Uniform reads over a million ids hit a 16 MB cache about 2% of the time, while its answers, each
 * promoted to the old generation and pushed out again, held 15-35 MB more of the server's memory, over the
 * 300 MB a server must stay under (bench/memory.ts at 1M items: SQLite 296-315 MB against 274-285 with this
 * bound; PostgreSQL + Redis 312-317 against 284-287, a round trip more for about 1.5% of the requests).
 */
export const UNPRIMED_KEPT_BYTES = 4 * 1024 * 1024;

/**
 * Where a prime takes the route's serializer from: the reply of the request that starts the generation.
 * `getSerializationFunction('200')` is the function `reply.serialize` runs for a 200 when neither the reply
 * nor the app sets a serializer of its own (fastify/lib/reply.js, Reply.prototype.serialize, and
 * getSchemaSerializer in lib/schemas.js), so a primed body is the one the route would write.
 */
export interface OkSerializerSource {
  getSerializationFunction(httpStatus: string): ((payload: { [key: string]: unknown }) => string) | undefined;
}

/** The answer of a body as the route's serializer wrote it. */
function answerOf(body: unknown): ItemAnswer {
  // Fastify's JSON serializers write strings; anything else could not be kept and sent as it is.
  if (typeof body !== 'string') throw new Error('item-answers: the serializer did not write a string');
  return { body, etag: strongEtag(body) };
}

const sizeOf = (held: Held) => ('body' in held ? held.body.length : 0) + ENTRY_OVERHEAD;

export class ItemAnswers<Row> {
  readonly #answers: VersionedAnswers<number, Held>;
  readonly #limits: ItemAnswerLimits;
  readonly #priming: ItemPriming<Row> | undefined;
  /** The running or last prime; each waits for the one before it, so that one runs at a time. */
  #prime: Promise<PrimeOutcome> | null = null;
  #closed = false;

  constructor(
    private readonly read: (id: number) => Promise<Row | undefined>,
    limits: ItemAnswerLimits = { entries: ITEM_ANSWER_ENTRIES, bytes: ITEM_ANSWER_BYTES },
    /** Keep answers from an id's first request (PostgreSQL), not its second (SQLite). */
    keepFromFirstRequest = false,
    /** How to read the whole resource, to prime each generation; without it nothing is primed. */
    priming?: ItemPriming<Row>,
  ) {
    this.#limits = limits;
    this.#priming = priming;
    this.#answers = new VersionedAnswers<number, Held>({
      bound: {
        max: limits.entries,
        maxSize: limits.bytes,
        // Characters, not bytes: V8 keeps a string of Latin-1 characters at one byte each.
        sizeCalculation: sizeOf,
      },
      ...(keepFromFirstRequest ? {} : { keepRule: new SecondRequestOfId() }),
    });
  }

  /**
   * The answer for `id` as of `dataVersion`, null when there is no such item. `serialize` writes the body
   * (the route's own serializer, so the bytes are those Fastify would send). `reply`, when given, lends the
   * same serializer to the prime of a generation this request starts.
   */
  async answer(dataVersion: number | null, id: number, serialize: (row: Row) => unknown, reply?: OkSerializerSource): Promise<ItemAnswer | null> {
    const starts = dataVersion !== null && dataVersion > this.#answers.version && this.#priming !== undefined && !this.#closed;
    const primeSerializer = starts ? reply?.getSerializationFunction('200') : undefined;
    const answering = this.#answers.answer(dataVersion, id, async () => {
      const row = await this.read(id);
      return row === undefined ? NOT_FOUND : answerOf(serialize(row));
    });
    // The call above began the new generation before its first await: the prime keeps its answers there.
    if (primeSerializer !== undefined && dataVersion !== null) this.#startPrime(dataVersion, primeSerializer);
    const held = await answering;
    return 'body' in held ? held : null;
  }

  /** Starts the prime of the generation of `version` once the one before it (if any) has ended. */
  #startPrime(version: number, serializer: (payload: { data: Row }) => string): void {
    const priming = this.#priming;
    if (priming === undefined) return;
    const previous = this.#prime;
    this.#prime = (async () => {
      // A prime of an older generation stops at its next check; it never rejects.
      if (previous !== null) await previous;
      const outcome = await primeAnswers<Row, Held>({
        version,
        priming,
        answerOf: (row) => answerOf(serializer({ data: row })),
        closed: () => this.#closed,
        target: {
          maxEntries: this.#limits.entries,
          isCurrent: (v) => this.#answers.version === v,
          fits: (held) =>
            this.#answers.count < this.#limits.entries && this.#answers.calculatedSize + sizeOf(held) <= PRIMED_SHARE * this.#limits.bytes,
          keepUnlessHeld: (v, id, held) => this.#answers.keepUnlessHeld(v, id, held),
        },
      });
      if (outcome === 'too-large') {
        this.#answers.limitKeptSize(version, this.#limits.unprimedKeptBytes ?? UNPRIMED_KEPT_BYTES);
      }
      return outcome;
    })();
  }

  /** The prime running or last run, null before any; it never rejects. */
  get priming(): Promise<PrimeOutcome> | null {
    return this.#prime;
  }

  /** Stops priming (the store is about to close) and waits for a page being read to come back. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#prime;
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
