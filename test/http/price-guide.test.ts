// The price guide as a file (src/export/price-guide.ts): the unfiltered export, written once per data
// version and served from disk, is the same bytes as the export streamed from the store, before and after
// an import; a request never waits for the file; a torn temporary file is never served; a download cut
// off mid-stream, or a server closed under one, leaves no file handle open.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { importPrices } from '../../src/services/price-import.service.js';
import { csvChunks } from '../../src/csv/csv-chunks.js';
import { generateDemo } from '../../src/demo/index.js';
import { openStore } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { EXPORT_COLUMNS, exportPriceBatches } from '../../src/store/repositories/price-export.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { resourceDataset } from '../helpers/resource-fixtures.js';
import { waitFor } from '../helpers/server-process.js';

const UNLIMITED_BURST = { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' };
const GUIDE = /^prices-[0-9a-f]{12}-v([0-9]+)\.csv$/;

async function dataVersion(ctx: TestContext): Promise<number> {
  const row = await ctx.store.db.selectFrom('data_version').select('version').where('id', '=', 1).executeTakeFirstOrThrow();
  return Number(row.version);
}

function exportDir(ctx: TestContext): string {
  const dir = ctx.config.exportDir;
  if (dir === null) throw new Error('the test context has no export directory');
  return dir;
}

/** The guide files in the directory (temporary files excluded), by version. */
function guideFiles(ctx: TestContext): Map<number, string> {
  const files = new Map<number, string>();
  let names: string[] = [];
  try {
    names = readdirSync(exportDir(ctx));
  } catch {
    return files;
  }
  for (const name of names) {
    const match = GUIDE.exec(name);
    if (match) files.set(Number(match[1]), join(exportDir(ctx), name));
  }
  return files;
}

async function guideWritten(ctx: TestContext, version: number): Promise<string> {
  // Generous: a background write on a machine shared by many test runs may take a while.
  await waitFor(async () => guideFiles(ctx).has(version), `the price guide file of version ${version}`, 180_000);
  return guideFiles(ctx).get(version) as string;
}

/** The unfiltered export as the store streams it (what every request got before the file existed). */
async function storeBytes(ctx: TestContext): Promise<Buffer> {
  let text = '';
  for await (const chunk of csvChunks(EXPORT_COLUMNS, exportPriceBatches(ctx.store, {}))) text += chunk;
  return Buffer.from(text, 'utf8');
}

async function exportBytes(ctx: TestContext, query = ''): Promise<Buffer> {
  const res = await ctx.get(`${V1}/prices/export.csv${query}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.rawPayload;
}

describe('the price guide file', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ dataset: resourceDataset(), env: UNLIMITED_BURST });
  });
  after(async () => {
    await ctx.close();
  });

  it('is written after start and served byte for byte as the store streams it, with the same headers', async () => {
    const version = await dataVersion(ctx);
    const path = await guideWritten(ctx, version);
    const expected = await storeBytes(ctx);
    assert.ok(expected.includes('"Line\r\nBreak, ""Quoted""'), 'the awkward rows are in it');
    assert.deepEqual(readFileSync(path), expected);
    const res = await ctx.get(`${V1}/prices/export.csv`);
    assert.deepEqual(res.rawPayload, expected);
    assert.match(String(res.headers['content-type']), /^text\/csv; charset=utf-8$/);
    assert.equal(res.headers['content-disposition'], 'attachment; filename="prices.csv"');
    assert.equal(res.headers['content-length'], undefined, 'no length announced, as when streaming from the store');
    // Conditional and HEAD requests behave as before.
    const notModified = await ctx.get(`${V1}/prices/export.csv`, 'alice', { headers: { 'if-none-match': String(res.headers.etag) } });
    assert.equal(notModified.statusCode, 304);
    const head = await ctx.get(`${V1}/prices/export.csv`, 'alice', { method: 'HEAD' });
    assert.equal(head.headers.etag, res.headers.etag);
    assert.equal(head.body, '');
  });

  it('counts a file-served export as one request', async () => {
    await guideWritten(ctx, await dataVersion(ctx));
    const first = await ctx.get(`${V1}/me`);
    await exportBytes(ctx);
    const second = await ctx.get(`${V1}/me`);
    const used = (res: typeof first) => (JSON.parse(res.body) as { usage: { used: number } }).usage.used;
    assert.equal(used(second) - used(first), 1, 'the export, once (/me is not counted)');
  });

  it('serves the store-streamed bytes while the file is missing, and writes it again', async () => {
    const version = await dataVersion(ctx);
    const path = await guideWritten(ctx, version);
    const fromFile = await exportBytes(ctx);
    rmSync(path);
    const fromStore = await exportBytes(ctx);
    assert.deepEqual(fromStore, fromFile);
    assert.deepEqual(readFileSync(await guideWritten(ctx, version)), fromFile);
  });

  it('ignores a torn temporary file, and removes it once it is stale', async () => {
    const version = await dataVersion(ctx);
    const path = await guideWritten(ctx, version);
    const expected = readFileSync(path);
    rmSync(path);
    // What a writer killed mid-write leaves: a dot-named temporary file with part of the bytes.
    const torn = join(exportDir(ctx), `.${path.slice(exportDir(ctx).length + 1)}.99999-deadbeef.tmp`);
    writeFileSync(torn, expected.subarray(0, Math.floor(expected.length / 2)));
    const hourAgo = new Date(Date.now() - 2 * 3600_000);
    utimesSync(torn, hourAgo, hourAgo);
    assert.deepEqual(await exportBytes(ctx), expected);
    assert.deepEqual(readFileSync(await guideWritten(ctx, version)), expected);
    await waitFor(async () => !readdirSync(exportDir(ctx)).includes(torn.slice(exportDir(ctx).length + 1)), 'the stale temporary file to go');
    assert.deepEqual(await exportBytes(ctx), expected);
  });

  it('after an import: the first request gets the new data at once, the new file follows, the old one goes', async () => {
    const before = await dataVersion(ctx);
    const oldPath = await guideWritten(ctx, before);
    const oldBytes = readFileSync(oldPath);
    // A later price for item 11, as `shelfapi import prices` would bring it.
    const line = oldBytes.toString('utf8').split('\r\n').find((l) => l.startsWith('11,')) as string;
    const fields = line.split(',');
    fields[6] = '1234.5';
    fields[11] = '2026-11-19T00:00:00.000Z';
    await importPrices(ctx.store, Readable.from([`${EXPORT_COLUMNS.join(',')}\r\n${fields.join(',')}\r\n`]));
    const version = await dataVersion(ctx);
    assert.equal(version, before + 1);
    const expected = await storeBytes(ctx);
    assert.ok(expected.includes(`\r\n${fields.join(',')}\r\n`), 'the imported price is current');
    // The first request does not wait for the file: it is served from the store, with the new data.
    assert.deepEqual(await exportBytes(ctx), expected);
    assert.deepEqual(readFileSync(await guideWritten(ctx, version)), expected);
    assert.deepEqual(await exportBytes(ctx), expected);
    await waitFor(async () => !guideFiles(ctx).has(before), 'the old version file to be removed');
  });

  it('notices an import made by another process without any request, and writes the new file', async () => {
    const before = await dataVersion(ctx);
    await guideWritten(ctx, before);
    const line = (await storeBytes(ctx)).toString('utf8').split('\r\n').find((l) => l.startsWith('12,')) as string;
    const fields = line.split(',');
    fields[7] = '77.25';
    fields[11] = '2026-11-19T01:00:00.000Z';
    await importPrices(ctx.store, Readable.from([`${EXPORT_COLUMNS.join(',')}\r\n${fields.join(',')}\r\n`]));
    // No request in between: the server's poll of the data version finds it.
    const path = await guideWritten(ctx, before + 1);
    assert.deepEqual(readFileSync(path), await storeBytes(ctx));
  });

  it('filtered exports hold only the rows of their filter', async () => {
    await guideWritten(ctx, await dataVersion(ctx));
    const text = (await exportBytes(ctx, '?platform=playstation')).toString('utf8');
    const rows = text.split('\r\n').filter((l) => l !== '').slice(1);
    assert.ok(rows.length > 0);
    assert.ok(rows.every((l) => /,PlayStation,/i.test(l)), text);
  });
});

describe('the price guide file: a directory that cannot be written', () => {
  let ctx: TestContext;
  let blocker: string;
  before(async () => {
    blocker = join(mkdtempSync(join(tmpdir(), 'shelfapi-guide-')), 'not-a-directory');
    writeFileSync(blocker, 'a file where the directory should be');
    ctx = await createTestContext({ dataset: resourceDataset(), env: { ...UNLIMITED_BURST, EXPORT_DIR: join(blocker, 'guide') } });
  });
  after(async () => {
    await ctx.close();
    rmSync(dirname(blocker), { recursive: true, force: true });
  });

  it('exports still stream from the store, and the failure is logged', async () => {
    assert.deepEqual(await exportBytes(ctx), await storeBytes(ctx));
    await waitFor(async () => ctx.logs.text().includes('price guide: write failed'), 'the failure to be logged');
    assert.deepEqual(await exportBytes(ctx), await storeBytes(ctx));
  });
});

/** File descriptors of this process open on `path`. */
function openHandles(path: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) n++;
    } catch {
      // closed while listing
    }
  }
  return n;
}

/** Starts a download of the unfiltered export over a real socket and stops reading after the first bytes. */
async function startDownload(port: number, key: string, query = ''): Promise<{ res: IncomingMessage; destroy(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: `${V1}/prices/export.csv${query}`, headers: { 'x-api-key': key } }, (res) => {
      res.once('data', () => {
        res.pause();
        resolve({ res, destroy: () => req.destroy() });
      });
    });
    req.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    req.end();
  });
}

describe('the price guide file: downloads cut off mid-stream', { skip: process.platform !== 'linux' && 'needs /proc' }, () => {
  let ctx: TestContext;
  let path: string;
  let port: number;
  let key: string;
  before(async () => {
    // Large enough (several MB) that a download stopped after its first bytes still holds the file open.
    const demo = generateDemo({ items: 60_000, now: new Date(FIXTURE_NOW) });
    ctx = await createTestContext({ dataset: { accounts: demo.accounts, keys: demo.keys }, env: UNLIMITED_BURST });
    // Loaded as `shelfapi load` does, without the request path's query time limit.
    const operator = openStore(ctx.config.database, { queryTimeoutMs: null });
    await loadDataset(operator, { catalogue: demo.catalogue(), prices: demo.prices() }, { keyPrefix: ctx.config.keyPrefix, now: Date.parse(FIXTURE_NOW) });
    await operator.close();
    key = ctx.loaded.keys.demo as string;
    path = await guideWritten(ctx, await dataVersion(ctx));
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  after(async () => {
    await ctx.close();
  });

  it('closes the file when the client goes away', async () => {
    assert.equal(openHandles(path), 0);
    for (let i = 0; i < 5; i++) {
      const download = await startDownload(port, key);
      assert.equal(openHandles(path), 1, 'the file is open while the download is under way');
      download.destroy();
      await waitFor(async () => openHandles(path) === 0, 'the file to be closed');
    }
  });

  it('closes the file when the client of a filtered export goes away (the rows are copied from it)', async () => {
    assert.equal(openHandles(path), 0);
    for (let i = 0; i < 3; i++) {
      // A term in most names: megabytes of rows, so the download is still under way when it stops reading.
      const download = await startDownload(port, key, '?search=e');
      assert.equal(openHandles(path), 1, 'the file is open while the filtered download is under way');
      download.destroy();
      await waitFor(async () => openHandles(path) === 0, 'the file to be closed');
    }
  });

  it('closes the file when the server closes under a download', async () => {
    const download = await startDownload(port, key);
    assert.equal(openHandles(path), 1);
    // As on SIGTERM: the server stops accepting and waits for requests in flight; this one's client leaves.
    const closing = ctx.app.close();
    setTimeout(() => download.destroy(), 100);
    await closing;
    await waitFor(async () => openHandles(path) === 0, 'the file to be closed');
  });
});
