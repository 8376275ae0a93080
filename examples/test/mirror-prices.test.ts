/**
 * examples/mirror-prices.ts against a live server: stopped by a tiny monthly quota, resumed after a run
 * killed mid-page, finished byte for byte equal to the export, idempotent, and extended by later rows.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createShelfClient, type ShelfClient } from '../../clients/typescript/src/index.js';
import { dataset, PRICED_IDS, startLiveServer, type LiveServer } from '../../clients/typescript/test/live-server.js';
import { ROOT, runCli } from '../../test/helpers/server-process.js';

/** Items published without a price, priced later by an import: they must land at the end of the mirror. */
const LATER_IDS = [28, 29, 30];

async function exportBytes(shelf: ShelfClient): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of await shelf.exportPricesCsv()) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

describe('examples/mirror-prices.ts', () => {
  let live: LiveServer;
  let dir: string;
  let out: string;
  let main: ShelfClient;

  /**
   * Runs the example as a user would with tsx; the client is resolved from its source, not dist. The
   * server is given as `--base-url`, or as `SHELF_API_URL` when `shelfApiUrl` is.
   */
  function mirror(key: string, file = out, shelfApiUrl?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const where = shelfApiUrl === undefined ? ['--base-url', live.origin] : [];
      const child = spawn(
        process.execPath,
        ['--conditions=shelfapi-source', '--import', 'tsx', 'examples/mirror-prices.ts', '--out', file, ...where, '--page-size', '5'],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '',
            SHELF_API_KEY: key,
            ...(shelfApiUrl === undefined ? {} : { SHELF_API_URL: shelfApiUrl }),
          },
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  before(async () => {
    const data = dataset();
    for (const id of LATER_IDS) {
      data.catalogue!.push({ masterItemId: id, name: `Later ${id}`, slug: `later-${id}`, category: 'game', platform: 'NES', status: 'PUBLISHED' });
    }
    // The limited account (addon) may make 3 counted requests a month: the mirror stops part way.
    live = await startLiveServer({ data, env: { PLAN_LIMITS: JSON.stringify({ addon: { monthly: 3 } }) } });
    main = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.main! });
    dir = mkdtempSync(join(tmpdir(), 'shelfapi-mirror-'));
    out = join(dir, 'prices.csv');
  });
  after(async () => {
    await live?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('stops cleanly on quota_exceeded, keeping every row mirrored so far', async () => {
    const run = await mirror(live.keys.limited!);
    assert.equal(run.code, 75, run.stderr);
    assert.match(run.stderr, /monthly quota reached\. 13 rows are kept in .*prices\.csv \(13 new this run\); run again after \d{4}-/);
    // Three pages of 5 rows, each after the first starting on the previous page's last row: 5 + 4 + 4.
    const lines = readFileSync(out, 'utf8').split('\r\n');
    assert.equal(lines[0], 'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate');
    assert.deepEqual(JSON.parse(readFileSync(`${out}.checkpoint.json`, 'utf8')), {
      version: 1,
      bytes: Buffer.byteLength(readFileSync(out)),
      rows: 13,
      lastMasterItemId: PRICED_IDS[12],
    });
  });

  test('resumes after a run killed mid-page, without duplicates or gaps, to exactly the export', async () => {
    // What a run killed between writing a page and recording it leaves: rows past the checkpoint, the
    // last one cut short, here longer than everything still to come so that overwriting cannot hide it.
    const [next, nextButOne] = [PRICED_IDS[13]!, PRICED_IDS[14]!];
    appendFileSync(out, `${next},Item ${next},item-${next},NES,game,1000000000${next},1,,2,,,2026-11-01T00:00:00.000Z\r\n${nextButOne},"${'x'.repeat(10_000)}`);
    const raised = await runCli(['accounts', 'set-plan', String(live.accounts.limited), '--plan', 'enthusiast'], live.env);
    assert.equal(raised.code, 0, raised.stderr);

    const run = await mirror(live.keys.limited!);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`resuming after masterItemId ${PRICED_IDS[12]} \\(13 rows already in`));
    assert.match(run.stdout, new RegExp(`done: ${PRICED_IDS.length - 13} new rows, ${PRICED_IDS.length} in`));
    assert.equal(readFileSync(out, 'utf8'), await exportBytes(main));
  });

  test('a run with nothing new changes nothing', async () => {
    const before = readFileSync(out, 'utf8');
    const run = await mirror(live.keys.limited!);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`up to date: ${PRICED_IDS.length} rows in`));
    assert.equal(readFileSync(out, 'utf8'), before);
  });

  test('rows added since are appended by the next run', async () => {
    const csv = join(dir, 'later.csv');
    writeFileSync(
      csv,
      'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n' +
        LATER_IDS.map((id) => `${id},Later ${id},later-${id},NES,game,2000000000${id},${id},,,,,2026-11-02T00:00:00.000Z\r\n`).join(''),
    );
    const imported = await runCli(['import', 'prices', csv], live.env);
    assert.equal(imported.code, 0, imported.stderr);

    const run = await mirror(live.keys.limited!);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`done: ${LATER_IDS.length} new rows, ${PRICED_IDS.length + LATER_IDS.length} in`));
    assert.equal(readFileSync(out, 'utf8'), await exportBytes(main));
  });

  test('a server not running at SHELF_API_URL ends in one clear line naming it, not a stack trace', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const origin = `http://127.0.0.1:${port}`;
    const run = await mirror(live.keys.main!, join(dir, 'nowhere.csv'), origin);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^mirror-prices: GET .* no answer from the server \(fetch failed: ECONNREFUSED\)/);
    assert.ok(run.stderr.includes(`is it running at ${origin}/developer/v1?`), run.stderr);
    assert.match(run.stderr, /set SHELF_API_URL or --base-url/);
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  });

  test('refuses a file it did not write, and changes nothing', async () => {
    const stranger = join(dir, 'stranger.csv');
    writeFileSync(stranger, 'not a mirror\r\n');
    const child = await mirror(live.keys.main!, stranger);
    assert.equal(child.code, 2);
    assert.match(child.stderr, /exists without .*checkpoint\.json/);
    assert.equal(readFileSync(stranger, 'utf8'), 'not a mirror\r\n');
    assert.ok(!existsSync(`${stranger}.checkpoint.json`));
  });
});
