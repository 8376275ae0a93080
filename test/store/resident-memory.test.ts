// A server reading an SQLite store keeps the file out of its own memory: random reads over a million-item
// catalogue used to map the file into the process (mmap), so its resident memory grew by the size of the
// pages read, 490 MB of a 760 MB file within seconds of load (issue 10, item 8).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { migrateToLatest, openStore } from '../../src/store/database.js';
import { TEST_STORE } from '../helpers/test-app.js';

const MIB = 1024 * 1024;
const FILLER_MIB = 48;
const ROW_BYTES = 16 * 1024;

/** Resident memory backed by files (mapped files and the program's own code), from the kernel. */
function residentFileMib(): number {
  const kib = /RssFile:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  assert.ok(kib !== undefined, 'RssFile in /proc/self/status');
  return Number(kib) / 1024;
}

describe('SQLite store and resident memory', {
  skip: (TEST_STORE !== 'sqlite' && 'SQLite only') || (!existsSync('/proc/self/status') && 'needs /proc (Linux)'),
}, () => {
  let dir: string;
  let path: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shelfapi-rss-'));
    path = join(dir, 'store.sqlite');
    const store = openStore({ dialect: 'sqlite', path });
    await migrateToLatest(store);
    const sqlite = store.sqlite;
    assert.ok(sqlite !== null);
    sqlite.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)');
    const insert = sqlite.prepare('INSERT INTO filler (bytes) VALUES (?)');
    sqlite.transaction(() => {
      for (let i = 0; i < (FILLER_MIB * MIB) / ROW_BYTES; i++) insert.run(randomBytes(ROW_BYTES));
    })();
    // Into the main file, out of the WAL: reads then come from the file itself.
    sqlite.pragma('wal_checkpoint(TRUNCATE)');
    await store.close();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(`reading ${FILLER_MIB} MiB of the file leaves the process's file-backed memory where it was`, async () => {
    // A fresh store: nothing of the file in its page cache yet.
    const store = openStore({ dialect: 'sqlite', path });
    try {
      const sqlite = store.sqlite;
      assert.ok(sqlite !== null);
      const before = residentFileMib();
      let read = 0;
      for (const row of sqlite.prepare('SELECT bytes FROM filler').iterate() as Iterable<{ bytes: Buffer }>) read += row.bytes.length;
      assert.equal(read, FILLER_MIB * MIB);
      const grown = residentFileMib() - before;
      assert.ok(grown < FILLER_MIB / 4, `file-backed resident memory grew by ${grown.toFixed(1)} MiB while reading ${FILLER_MIB} MiB`);
    } finally {
      await store.close();
    }
  });
});
