/**
 * On PostgreSQL the single-item reads of one turn of the event loop go to the store as one statement
 * (src/store/hot-queries.ts, batchedById): each caller gets its own id's rows, a missing id none, and a
 * failed statement fails its callers only.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchedById } from '../../src/store/hot-queries.js';

interface Row {
  id: number;
  name: string;
}

describe('reads by id batched per turn of the event loop', () => {
  it('reads the ids asked for together in one statement, each id once, and answers each caller with its own rows', async () => {
    const statements: number[][] = [];
    const read = batchedById<Row>(async (ids) => {
      statements.push(ids);
      return ids.filter((id) => id !== 404).map((id) => ({ id, name: `item ${id}` }));
    }, (row) => row.id);
    const answers = await Promise.all([read(1), read(2), read(1), read(404), read(3)]);
    assert.deepEqual(statements, [[1, 2, 404, 3]]);
    assert.deepEqual(answers, [[{ id: 1, name: 'item 1' }], [{ id: 2, name: 'item 2' }], [{ id: 1, name: 'item 1' }], [], [{ id: 3, name: 'item 3' }]]);
    // A later turn is a statement of its own.
    assert.deepEqual(await read(2), [{ id: 2, name: 'item 2' }]);
    assert.deepEqual(statements, [[1, 2, 404, 3], [2]]);
  });

  it('a failed statement fails its own callers, and the next turn reads again', async () => {
    let failing = true;
    const read = batchedById<Row>(async (ids) => {
      if (failing) throw new Error('store unreachable');
      return ids.map((id) => ({ id, name: String(id) }));
    }, (row) => row.id);
    const results = await Promise.allSettled([read(1), read(2)]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    failing = false;
    assert.deepEqual(await read(1), [{ id: 1, name: '1' }]);
  });

  it('splits a turn of more than 500 ids into statements of 500', async () => {
    const sizes: number[] = [];
    const read = batchedById<Row>(async (ids) => {
      sizes.push(ids.length);
      return ids.map((id) => ({ id, name: String(id) }));
    }, (row) => row.id);
    const answers = await Promise.all(Array.from({ length: 1201 }, (_, i) => read(i + 1)));
    assert.deepEqual(sizes, [500, 500, 201]);
    assert.ok(answers.every((rows, i) => rows.length === 1 && rows[0]!.id === i + 1));
  });
});
