/**
 * Priming one cache of item answers (src/http/api/answer-priming.ts, ItemAnswers), over pages of rows made here:
 * a catalogue that fits is kept whole, as computed; one larger than the cache is not primed and keeps a small hot
 * set; a newer version, a page that cannot be read or a close stops a prime. And the serializer a prime takes
 * from a request's reply is the route's own. The same on a server, over the store: answer-priming-server.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { itemPriming, type PrimeLog } from '../../src/http/api/answer-priming.js';
import { strongEtag } from '../../src/http/api/conditional.js';
import { ItemAnswers, type OkSerializerSource } from '../../src/http/api/item-answers.js';
import type { ItemPages } from '../../src/store/item-pages.js';
import { within } from '../helpers/held-principals.js';

describe("the serializer a prime takes from a request's reply", () => {
  it('is the one reply.serialize runs for a 200 (fastify/lib/reply.js), not JSON.stringify', async () => {
    const app = Fastify();
    const schema = { type: 'object', properties: { data: { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' } } } } };
    // Written differently by the schema's serializer: a field the schema lacks is left out, an integer given as text is a number.
    const payload = { data: { id: '5', name: 'Café "x"', extra: true } };
    let got: { serialized: unknown; taken: string | undefined } | undefined;
    app.get('/', { schema: { response: { 200: schema, 404: { type: 'object', properties: { error: { type: 'string' } } } } } }, async (_request, reply) => {
      const taken: OkSerializerSource = reply;
      got = { serialized: reply.serialize(payload), taken: taken.getSerializationFunction('200')?.(payload) };
      return { data: { id: 1, name: 'n' } };
    });
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/' })).statusCode, 200);
    } finally {
      await app.close();
    }
    assert.equal(got?.serialized, '{"data":{"id":5,"name":"Café \\"x\\""}}');
    assert.equal(got.taken, got.serialized);
  });
});

describe('priming one cache', () => {
  interface Row {
    masterItemId: number;
    text: string;
  }
  /** A store of rows whose page reads are counted, can be held back, and fail when told to. */
  function fakePages(ids: number[]) {
    const rows = new Map(ids.map((id) => [id, { masterItemId: id, text: `item ${id}` }]));
    const state = { pageReads: 0, inFlight: 0, mostInFlight: 0, failing: false, hold: null as Promise<void> | null };
    const pages: ItemPages<Row> = {
      countUpTo: async (upTo) => Math.min(rows.size, upTo),
      after: async (afterId, limit) => {
        state.pageReads++;
        state.inFlight++;
        state.mostInFlight = Math.max(state.mostInFlight, state.inFlight);
        try {
          if (state.hold !== null) await state.hold;
          if (state.failing) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
          return [...rows.values()].filter((row) => row.masterItemId > afterId).sort((a, b) => a.masterItemId - b.masterItemId).slice(0, limit).map((row) => ({ ...row }));
        } finally {
          state.inFlight--;
        }
      },
      idOf: (row) => row.masterItemId,
    };
    const read = async (id: number) => {
      const row = rows.get(id);
      return row === undefined ? undefined : { ...row };
    };
    return { rows, state, pages, read };
  }
  function logOf() {
    const lines: Array<{ level: 'info' | 'warn'; fields: object; message: string }> = [];
    const log: PrimeLog = {
      info: (fields, message) => lines.push({ level: 'info', fields, message }),
      warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
    };
    return { lines, log };
  }
  const serialize = (row: Row) => JSON.stringify({ data: row });
  /** The reply of a request, as far as a prime takes from it: the route's serializer of a 200. */
  const reply: OkSerializerSource = { getSerializationFunction: () => (payload) => JSON.stringify(payload) };
  const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

  it('keeps every answer of a catalogue that fits, as computed, from pages, on either keeping rule', async () => {
    for (const keepFromFirstRequest of [false, true]) {
      const { state, pages, read } = fakePages(ids(25));
      const { lines, log } = logOf();
      const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, keepFromFirstRequest, { ...itemPriming('items', pages, 'sqlite', log), pageRows: 10 });
      assert.deepEqual(await answers.answer(1, 7, serialize, reply), { body: serialize({ masterItemId: 7, text: 'item 7' }), etag: strongEtag(serialize({ masterItemId: 7, text: 'item 7' })) });
      assert.equal(await answers.priming, 'primed');
      assert.equal(answers.size, 25);
      assert.equal(state.pageReads, 3, 'pages of 10: 10, 10, 5');
      assert.equal(lines.filter((line) => line.message === 'item answers primed').length, 1);
      const stored = fakePages(ids(25));
      for (const id of ids(25)) {
        const row = (await stored.read(id))!;
        assert.deepEqual(await answers.answer(1, id, () => assert.fail('read from memory'), reply), { body: serialize(row), etag: strongEtag(serialize(row)) });
      }
      assert.equal(await answers.answer(1, 99, serialize, reply), null, 'an id not in the catalogue is still read');
    }
  });

  it('does not prime a catalogue of more rows than the cache holds, and stops before the bytes pass their share', async () => {
    const { state, pages, read } = fakePages(ids(5));
    const { lines, log } = logOf();
    const tiny = new ItemAnswers(read, { entries: 4, bytes: 1 << 20 }, true, itemPriming('items', pages, 'sqlite', log));
    await tiny.answer(1, 1, serialize, reply);
    assert.equal(await tiny.priming, 'too-large');
    assert.equal(state.pageReads, 0, 'no page read');
    assert.equal(tiny.size, 1, "only the request's own answer");
    assert.equal(lines[0]?.message, 'item answers not primed: more rows than the cache holds');

    // Each answer counts about 240 of the bound: 10 fill 2,400, of which 90% is 2,160 (nine answers).
    const small = fakePages(ids(10));
    const bytes = new ItemAnswers(small.read, { entries: 100, bytes: 2400 }, false, itemPriming('items', small.pages, 'sqlite', logOf().log));
    await bytes.answer(1, 1, serialize, reply);
    assert.equal(await bytes.priming, 'full');
    assert.ok(bytes.size >= 8 && bytes.size <= 9, `kept ${bytes.size}`);
  });

  it('keeps a small hot set of a catalogue too large to prime, and the whole of one that fits', async () => {
    // Each answer counts about 240 of the bound: three fit in 750.
    const limits = { entries: 4, bytes: 1 << 20, unprimedKeptBytes: 750 };
    const sqlite = fakePages(ids(10));
    const small = new ItemAnswers(sqlite.read, limits, false, itemPriming('items', sqlite.pages, 'sqlite', logOf().log));
    await small.answer(1, 1, serialize, reply);
    assert.equal(await small.priming, 'too-large');
    for (const id of ids(10)) for (let ask = 0; ask < 2; ask++) await small.answer(1, id, serialize, reply);
    assert.equal(small.size, 3, 'within 750 of the bound, not its 4 entries');
    // The most recently kept stay: 8, 9 and 10 come from memory, 1 is read again.
    for (const id of [8, 9, 10]) await small.answer(1, id, () => assert.fail(`id ${id} read from the store`), reply);
    let reads = 0;
    await small.answer(1, 1, (row) => (reads++, serialize(row)), reply);
    assert.equal(reads, 1);

    // PostgreSQL keeps an answer from its first request, within the same bound.
    const postgres = fakePages(ids(10));
    const first = new ItemAnswers(postgres.read, limits, true, itemPriming('items', postgres.pages, 'postgres', logOf().log));
    await first.answer(1, 1, serialize, reply);
    assert.equal(await first.priming, 'too-large');
    for (const id of ids(10)) await first.answer(1, id, serialize, reply);
    assert.equal(first.size, 3);
    await first.answer(1, 10, () => assert.fail('id 10 read from the store'), reply);

    // A catalogue that fits is primed whole, past the hot set's bound.
    const fits = fakePages(ids(4));
    const primed = new ItemAnswers(fits.read, limits, false, itemPriming('items', fits.pages, 'sqlite', logOf().log));
    await primed.answer(1, 1, serialize, reply);
    assert.equal(await primed.priming, 'primed');
    for (const id of ids(4)) await primed.answer(1, id, serialize, reply);
    assert.equal(primed.size, 4);
  });

  it('stops when a newer version starts, keeps nothing of the old one under it, runs one prime at a time, and replaces nothing held', async () => {
    const { rows, state, pages, read } = fakePages(ids(30));
    const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, true, { ...itemPriming('items', pages, 'postgres', logOf().log), pageRows: 10 });
    let release!: () => void;
    state.hold = new Promise((resolve) => (release = resolve));
    await answers.answer(1, 1, serialize, reply);
    const first = answers.priming;
    await within(1000, 'the first page asked for', async () => state.pageReads === 1);
    // Version 2: an item changes; a request of it keeps its answer before the prime gets there.
    rows.set(15, { masterItemId: 15, text: 'fifteen, fresher' });
    rows.set(20, { masterItemId: 20, text: 'twenty, new' });
    assert.equal((await answers.answer(2, 15, serialize, reply))?.body, serialize({ masterItemId: 15, text: 'fifteen, fresher' }));
    rows.set(15, { masterItemId: 15, text: 'fifteen, changed after' });
    state.hold = null;
    release();
    assert.equal(await first, 'superseded');
    assert.equal(await answers.priming, 'primed');
    assert.equal(state.mostInFlight, 1, 'one page read at a time');
    assert.equal(answers.size, 30);
    assert.equal((await answers.answer(2, 20, () => assert.fail('read'), reply))?.body, serialize({ masterItemId: 20, text: 'twenty, new' }));
    assert.equal((await answers.answer(2, 15, () => assert.fail('read'), reply))?.body, serialize({ masterItemId: 15, text: 'fifteen, fresher' }), 'the answer a request kept stays');
    // A request that read version 1 late starts nothing.
    const last = answers.priming;
    await answers.answer(1, 3, serialize, reply);
    assert.equal(answers.priming, last);
  });

  it('a page that cannot be read ends the prime with one warning, no rejection, and requests go on', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const { state, pages, read } = fakePages(ids(10));
      const { lines, log } = logOf();
      const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, false, itemPriming('items', pages, 'sqlite', log));
      state.failing = true;
      assert.equal((await answers.answer(1, 2, serialize, reply))?.body, serialize({ masterItemId: 2, text: 'item 2' }));
      assert.equal(await answers.priming, 'failed');
      assert.deepEqual(
        lines.map((line) => [line.level, line.message, line.fields]),
        [['warn', 'item answers priming stopped: the store could not be read', { cache: 'items', dataVersion: 1, reason: 'connect ECONNREFUSED 127.0.0.1:5432' }]],
      );
      state.failing = false;
      for (let i = 0; i < 3; i++) assert.equal((await answers.answer(1, 2, serialize, reply))?.body, serialize({ masterItemId: 2, text: 'item 2' }));
      assert.equal(answers.size, 1, 'kept from its second request, as without priming');
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(rejections, []);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('closing stops a prime at its next page', async () => {
    const { state, pages, read } = fakePages(ids(30));
    const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, true, { ...itemPriming('items', pages, 'postgres', logOf().log), pageRows: 10 });
    let release!: () => void;
    state.hold = new Promise((resolve) => (release = resolve));
    await answers.answer(1, 1, serialize, reply);
    await within(1000, 'the first page asked for', async () => state.pageReads === 1);
    const closing = answers.close();
    release();
    await closing;
    assert.equal(await answers.priming, 'superseded');
    assert.equal(state.pageReads, 1);
    assert.equal(answers.size, 1);
  });
});
