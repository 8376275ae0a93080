// A SQLite server's WAL is copied into the database file by a thread of its own, not inside a commit on the
// event loop (src/store/sqlite-checkpoints.ts): the serving connection's own checkpoint waits for 16,384
// pages, the thread copies what is written within a tick, and a thread that stops is started again.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { openSqliteConnection } from '../../src/store/database.js';
import { CHECKPOINT_EVERY_MS, FALLBACK_CHECKPOINT_PAGES, startCheckpointThread } from '../../src/store/sqlite-checkpoints.js';

/** How many pages the file's WAL holds (a checkpoint from another connection reports it). */
function walPages(path: string): number {
  const other = openSqliteConnection(path);
  try {
    const [state] = other.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
    return state!.log;
  } finally {
    other.close();
  }
}

describe('SQLite checkpoints from a thread', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-checkpoints-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('copies what a connection writes into the file within a tick, and the connection does not do it itself', async () => {
    const path = join(dir, 'written.sqlite');
    const conn = openSqliteConnection(path);
    conn.exec('create table t (id integer primary key, body text)');
    const thread = startCheckpointThread(conn, path, (error) => assert.fail(error));
    try {
      assert.equal(conn.pragma('wal_autocheckpoint', { simple: true }), FALLBACK_CHECKPOINT_PAGES);
      // 2,000 pages (past SQLite's own 1,000-page checkpoint), in writes a tick apart.
      const insert = conn.prepare('insert into t (body) values (?)');
      for (let write = 0; write < 20; write++) {
        conn.transaction(() => {
          for (let i = 0; i < 100; i++) insert.run('x'.repeat(3000));
        })();
        await sleep(CHECKPOINT_EVERY_MS / 4);
      }
      let behind = Infinity;
      const started = Date.now();
      while (behind > 0 && Date.now() - started < 5000) {
        await sleep(CHECKPOINT_EVERY_MS);
        behind = thread.walPagesBehind;
      }
      assert.equal(behind, 0, 'the thread copied every page written');
      // Copied into the database file itself (it held a page or two before: the rest was in the WAL).
      assert.ok(statSync(path).size > 2000 * 3000, `the database file holds ${statSync(path).size} bytes`);
      assert.deepEqual(conn.prepare('select count(*) as n from t').get(), { n: 2000 });
      assert.equal(thread.restarts, 0);
    } finally {
      await thread.close();
      conn.close();
    }
    // Without the thread, the same writes stay in the WAL until the connection's own checkpoint at 16,384 pages.
    const alone = openSqliteConnection(join(dir, 'alone.sqlite'));
    try {
      alone.pragma(`wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES}`);
      alone.exec('create table t (id integer primary key, body text)');
      const insert = alone.prepare('insert into t (body) values (?)');
      for (let write = 0; write < 20; write++) {
        alone.transaction(() => {
          for (let i = 0; i < 100; i++) insert.run('x'.repeat(3000));
        })();
      }
      await sleep(3 * CHECKPOINT_EVERY_MS);
      assert.ok(statSync(join(dir, 'alone.sqlite')).size < 100_000, 'nothing copied into the database file');
      const pages = walPages(join(dir, 'alone.sqlite'));
      assert.ok(pages > 1000, `${pages} pages in the WAL: the connection did not copy them itself`);
    } finally {
      alone.close();
    }
  });

  it('a thread that stops is started again, and says so', async () => {
    // A file that is not there: the thread fails at once, each time it is started.
    const path = join(dir, 'missing', 'gone.sqlite');
    const conn = openSqliteConnection(join(dir, 'other.sqlite'));
    const errors: Error[] = [];
    const thread = startCheckpointThread(conn, path, (error) => errors.push(error));
    try {
      const started = Date.now();
      while (thread.restarts < 2 && Date.now() - started < 10_000) await sleep(50);
      assert.ok(thread.restarts >= 2, `started again ${thread.restarts} times`);
      assert.ok(errors.length >= 2 && errors.every((e) => /unable to open|directory does not exist|no such file/i.test(e.message)), errors.map((e) => e.message).join('; '));
    } finally {
      await thread.close();
      conn.close();
    }
    const restarts = thread.restarts;
    await sleep(1500);
    assert.equal(thread.restarts, restarts, 'closed: never started again');
  });

  it('a SQLite server runs the thread, reports it on /metrics, and stops it when it closes', async () => {
    const config = loadConfig({ DATABASE_URL: join(dir, 'served.sqlite'), PORT: '0', OPS_PORT: '0', EXPORT_DIR: 'off', LOG_LEVEL: 'silent' });
    const server = await startServer(config);
    try {
      assert.equal(server.store.sqlite?.pragma('wal_autocheckpoint', { simple: true }), FALLBACK_CHECKPOINT_PAGES);
      const address = server.ops?.server.address();
      assert.ok(address !== null && typeof address === 'object');
      const metrics = await (await fetch(`http://127.0.0.1:${address.port}/metrics`)).text();
      assert.match(metrics, /^shelfapi_sqlite_wal_pages_behind \d+$/m);
      assert.match(metrics, /^shelfapi_sqlite_checkpoint_thread_restarts_total 0$/m);
    } finally {
      await server.close();
    }
  });
});
