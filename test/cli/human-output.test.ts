// The command line for people (issue 5): progress of long commands and the keys tables and usage chart,
// run as an operator runs them (a child process per command, an SQLite file). A child's stderr is a pipe,
// not a terminal, so long commands write plain progress lines there; stdout keeps what it always held.
// Requests counted for `keys usage` are real requests made against the app over the same store file.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ManualClock } from '../../src/clock.js';
import { dayOf } from '../../src/metering/periods.js';
import type { Store } from '../../src/store/database.js';
import { fixture } from '../helpers/fixture.js';
import {
  V1,
  apiOver,
  assertRefusedRows,
  openSqliteStore,
  parseJsonOutput,
  runCli,
  tableCounts,
  tempDir,
  type ApiClient,
  type CliResult,
} from '../helpers/cli-helpers.js';
import { cliProcess, freePorts, waitFor } from '../helpers/server-process.js';

const DAY = 86_400_000;
const tmp = tempDir();
const stores: Store[] = [];
const apis: ApiClient[] = [];
after(async () => {
  for (const api of apis) await api.close();
  for (const store of stores) await store.close();
  tmp.cleanup();
});

function ok(result: CliResult): CliResult {
  assert.equal(result.code, 0, `exit 0 expected; stderr: ${result.stderr}`);
  return result;
}

/** stderr of a long command off a terminal: plain lines only, each naming the command; no redrawing. */
function progressLines(stderr: string, label: string): string[] {
  assert.ok(!stderr.includes('\r') && !stderr.includes('\x1b'), 'no carriage return or escape sequence off a terminal');
  assert.ok(stderr.endsWith('\n'), 'whole lines');
  const lines = stderr.slice(0, -1).split('\n');
  for (const line of lines) assert.match(line, new RegExp(`^${label}: [a-z ]+ (started|done|\\d)`), line);
  return lines;
}

/** A table of src/cli/table.ts: header, dashes, rows; cells split where two or more spaces separate them. */
function parseTable(lines: string[]): { headers: string[]; rows: string[][] } {
  const [header, dashes, ...rows] = lines;
  assert.ok(header !== undefined && dashes !== undefined);
  assert.match(dashes, /^-+( {2}-+)*$/, 'a line of dashes under the header');
  const split = (line: string) => line.trim().split(/ {2,}/);
  assert.equal(split(dashes).length, split(header).length, 'one run of dashes per column');
  return { headers: split(header), rows: rows.map(split) };
}

describe('load, import prices, keys list and keys usage, as a person sees them', () => {
  const db = tmp.db('people');
  const env = { DATABASE_URL: db };
  let store: Store;
  let keys: Map<string, string>;

  before(async () => {
    store = await openSqliteStore(db);
    stores.push(store);
  });

  it('load FILE.json: the summary on stdout; on stderr a start and an end line per section', async () => {
    const file = join(tmp.dir, 'fixture.json');
    writeFileSync(file, JSON.stringify(fixture()));
    const result = ok(await runCli(['load', file], env));
    const out = result.stdout.split('\n');
    assert.match(out[0]!, /^Loaded 4 accounts, 9 keys, 10 catalogue, 8 prices, /);
    keys = new Map(out.slice(1, -1).map((line) => {
      const m = /^key (\S+) \(shown once\): (\S+)$/.exec(line);
      assert.ok(m, `a key line: ${line}`);
      return [m[1]!, m[2]!];
    }));
    assert.equal(keys.size, fixture().keys!.length);
    assert.doesNotMatch(result.stdout, /^load: /m, 'no progress on stdout');

    const lines = progressLines(result.stderr, 'load');
    const f = fixture();
    const sections: Array<[string, number]> = [
      ['accounts', f.accounts!.length],
      ['keys', f.keys!.length],
      ['catalogue', f.catalogue!.length],
      ['prices', f.prices!.length],
      ['current prices', new Set(f.prices!.map((p) => p.masterItemId)).size],
      ['collection', f.collection!.length],
      ['listings', f.listings!.length],
      ['offers', f.offers!.length],
      ['transactions', f.transactions!.length],
    ];
    const rows = (n: number) => (n === 1 ? '1 row' : `${n} rows`);
    assert.deepEqual(
      lines.map((l) => l.replace(/ in \d+\.\d s.*$/, '')),
      sections.flatMap(([s, n]) => [`load: ${s} started, ${rows(n)}`, `load: ${s} done, ${rows(n)}`]),
      'small sections: a start and an end line each, nothing between',
    );
  });

  it('a refused load off a terminal is only its refusal: progress lines are held back, then dropped', async () => {
    // Accounts, keys, catalogue and prices pass; the collection's third row does not.
    const file = join(tmp.dir, 'bad.json');
    const data = fixture();
    data.collection![2] = { ...data.collection![2]!, condition: 'MINT' as never };
    writeFileSync(file, JSON.stringify(data));
    const path = tmp.db('refused');
    const other = await openSqliteStore(path);
    stores.push(other);
    const before = await tableCounts(other);
    // Every stderr line is the refusal's (a count, then the bad row): no progress line among them.
    const lines = assertRefusedRows(await runCli(['load', file], { DATABASE_URL: path }), 1);
    assert.match(lines[0]!, /^collection row 3: field 'condition' .*, got "MINT"$/);
    assert.deepEqual(await tableCounts(other), before);
  });

  it('import prices FILE.csv: "Imported ..." alone on stdout; prices, then current prices, on stderr', async () => {
    const file = join(tmp.dir, 'prices.csv');
    writeFileSync(
      file,
      'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n' +
        '2,Pokémon Snap,pokemon-snap-2,Nintendo 64,game,045496870027,17.5,,95,,,2026-11-19T00:00:00.000Z\r\n' +
        '8,Item,x-8,PlayStation,game,711719000089,6,8,,,,2026-11-01T00:00:00.000Z\r\n',
    );
    const result = ok(await runCli(['import', 'prices', file], env));
    assert.equal(result.stdout, 'Imported 2 price rows for 2 items.\n');
    const lines = progressLines(result.stderr, 'import');
    assert.deepEqual(
      lines.map((l) => l.replace(/ in \d+\.\d s.*$/, '')),
      ['import: prices started', 'import: prices done, 2 rows', 'import: current prices started, 2 rows', 'import: current prices done, 2 rows'],
    );
  });

  it('keys list: a table of every key with its status, dates and scopes, and a count under it', async () => {
    const result = ok(await runCli(['keys', 'list', '--account', '1'], env));
    assert.equal(result.stderr, '');
    const lines = result.stdout.split('\n');
    assert.equal(lines.at(-1), '', 'ends with a newline');
    assert.equal(lines.at(-2), 'Account 1: 6 keys, 4 active.');
    assert.equal(lines.at(-3), '', 'a blank line between the table and the count');
    const { headers, rows } = parseTable(lines.slice(0, -3));
    assert.deepEqual(headers, ['id', 'name', 'key', 'status', 'created', 'expires', 'last used (UTC)', 'scopes']);
    assert.equal(rows.length, 6);
    const byName = new Map(rows.map((r) => [r[1]!, r]));
    const today = dayOf(Date.now());
    const last4 = (ref: string) => `…${keys.get(ref)!.slice(-4)}`;
    assert.deepEqual(byName.get('all scopes'), ['1', 'all scopes', last4('alice'), 'active', today, 'never', 'never', 'all']);
    assert.deepEqual(byName.get('no scopes')?.slice(2), [last4('alice-noscope'), 'active', today, 'never', 'never', '(none)']);
    assert.deepEqual(byName.get('revoked')?.slice(3, 4), [`revoked ${today}`]);
    assert.deepEqual(byName.get('expired')?.slice(3, 6), ['expired 2026-01-01', today, '2026-01-01']);
    const laterMs = Date.parse('2027-01-01T00:00:00.000Z');
    const later = laterMs <= Date.now() ? 'expired 2027-01-01' : laterMs - Date.now() <= 7 * 86_400_000 ? 'expires soon' : 'active';
    assert.deepEqual(byName.get('expires later')?.slice(3, 6), [later, today, '2027-01-01']);
    assert.deepEqual(rows.map((r) => Number(r[0])), [1, 2, 3, 4, 5, 6], 'ascending id');
    for (const ref of keys.keys()) assert.ok(!result.stdout.includes(keys.get(ref)!.slice(0, -4)), 'never the key');
  });

  it('keys usage: the last 30 UTC days ending today, zeros included, as a table and then a chart', async () => {
    const key = keys.get('alice')!;
    const clock = new ManualClock(Date.now());
    const api = await apiOver(store, {}, clock);
    apis.push(api);
    const todayMs = Date.now();
    const today = dayOf(todayMs);
    const noon = (daysAgo: number) => Date.parse(`${dayOf(todayMs - daysAgo * DAY)}T12:00:00.000Z`);
    // Oldest first, so the key's last use ends up today. 30 days ago is outside the window.
    const plan: Array<[daysAgo: number, requests: number]> = [[30, 4], [29, 2], [9, 5], [2, 1]];
    for (const [daysAgo, requests] of plan) {
      clock.set(noon(daysAgo));
      for (let i = 0; i < requests; i++) assert.equal((await api.get(`${V1}/catalogue?limit=1`, key)).statusCode, 200);
    }
    clock.set(noon(9));
    assert.equal((await api.get(`${V1}/me`, key)).statusCode, 200, '/me is never counted');
    clock.set(Date.now());
    for (let i = 0; i < 3; i++) assert.equal((await api.get(`${V1}/prices/1`, key)).statusCode, 200);
    const expected = new Map<string, number>([[dayOf(noon(29)), 2], [dayOf(noon(9)), 5], [dayOf(noon(2)), 1], [today, 3]]);

    const [text, json] = await Promise.all([runCli(['keys', 'usage', '1'], env), runCli(['keys', 'usage', '1', '--json'], env)]);
    ok(text);
    assert.equal(text.stderr, '');
    const report = parseJsonOutput(json) as { total: number; days: Array<{ day: string; requests: number }> };
    assert.equal(report.total, 11, 'the JSON is unchanged: the same counts, newest first');
    assert.equal(report.days[0]!.day, today);

    const lines = text.stdout.split('\n');
    assert.match(lines[0]!, new RegExp(`^Key 1 \\(…${key.slice(-4)}, all scopes, account 1\\): 11 requests in 30 UTC days, ${dayOf(noon(29))} to ${today}; last used ${today} \\d\\d:\\d\\d:\\d\\d UTC\\.$`));
    assert.equal(lines[1], '');
    const { headers, rows } = parseTable(lines.slice(2, 2 + 2 + 30));
    assert.deepEqual(headers, ['day', 'weekday', 'requests']);
    assert.equal(rows.length, 30);
    assert.equal(rows.at(-1)![0], today, 'ends today');
    for (let i = 0; i < 30; i++) {
      const day = dayOf(todayMs - (29 - i) * DAY);
      const weekday = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][new Date(todayMs - (29 - i) * DAY).getUTCDay()];
      assert.deepEqual(rows[i], [day, weekday, String(expected.get(day) ?? 0)], `row ${i}`);
    }

    const chart = lines.slice(2 + 2 + 30);
    assert.equal(chart[0], '');
    assert.equal(chart[1], 'Requests per day:');
    const bars = chart.slice(2, 7);
    const [axis, ticks] = chart.slice(7, 9);
    assert.deepEqual(chart.slice(9), [''], 'nothing after the chart');
    assert.match(bars[0]!, /^5 ┤/, 'the peak on the axis');
    for (const row of bars.slice(1)) assert.match(row, /^ {2}┤/);
    assert.equal(axis, `0 └${'─'.repeat(60)}`, 'two columns a day for 30 days');
    assert.match(ticks!, new RegExp(`${today.slice(5)}$`), 'the last date under the axis is today');
    // Each day's column, from the bottom row up: full blocks in proportion to the peak (5 requests = 5 rows).
    const column = (i: number) => bars.map((row) => [...row][3 + 2 * i] ?? ' ').reverse().join('');
    for (let i = 0; i < 30; i++) {
      const n = expected.get(dayOf(todayMs - (29 - i) * DAY)) ?? 0;
      assert.equal(column(i), '█'.repeat(n) + ' '.repeat(5 - n), `column of day ${i}`);
    }
  });

  it('keys usage of a key never used: 30 rows of 0, and no chart to draw', async () => {
    const result = ok(await runCli(['keys', 'usage', '2'], env));
    const lines = result.stdout.split('\n');
    assert.match(lines[0]!, /: 0 requests in 30 UTC days, .*; last used never\.$/);
    const { rows } = parseTable(lines.slice(2, 34));
    assert.equal(rows.length, 30);
    assert.ok(rows.every((r) => r[2] === '0'));
    assert.deepEqual(lines.slice(34), ['', 'No requests in these 30 days.', '']);
  });
});

describe('seed and serve --demo-if-empty off a terminal', () => {
  it('seed --demo --items 200: the summary and keys alone on stdout, progress lines on stderr', async () => {
    const result = ok(await runCli(['seed', '--demo', '--items', '200'], { DATABASE_URL: tmp.db('seed') }));
    const out = result.stdout.split('\n');
    assert.equal(out.length, 6);
    assert.match(out[0]!, /^Seeded 200 items, \d+ price records in \d+\.\d s\.$/);
    assert.match(out[2]!, /^ {2}shelf_live_\w+$/);
    const lines = progressLines(result.stderr, 'seed');
    assert.ok(lines.includes('seed: catalogue started, 200 rows'));
    assert.ok(lines.some((l) => l.startsWith('seed: catalogue done, 200 rows in ')));
    assert.ok(lines.includes('seed: prices started'), 'the generator cannot say its price count up front');
    assert.ok(lines.some((l) => /^seed: prices done, \d+ rows in /.test(l)));
    assert.ok(lines.some((l) => /^seed: collection started, \d+ rows$/.test(l)));
  });

  it('serve --demo-if-empty: seed progress on stderr, the demo key, the sign-in link and the address on stdout', async () => {
    const [port, opsPort] = (await freePorts(2)) as [number, number];
    const child = cliProcess(['serve', '--demo-if-empty'], { DATABASE_URL: tmp.db('serve'), PORT: String(port), OPS_PORT: String(opsPort) });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor(async () => stdout.includes('shelfapi serving'), 'the server to start', 60_000);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
    assert.match(
      stdout,
      /^Seeded the demo store \(5000 items\)\. Demo key, shown once:\n\n {2}shelf_live_\w+\n\nManage the demo account's keys .*\n.*\n\n {2}http:\/\/127\.0\.0\.1:\d+\/settings\/sign-in\?token=[\w-]+\.[\w-]+\.[\w-]+\n\nshelfapi serving http:/,
    );
    assert.doesNotMatch(stdout, /^seed: /m);
    const lines = progressLines(stderr.split('\n').filter((l) => l.startsWith('seed: ')).join('\n') + '\n', 'seed');
    assert.ok(lines.includes('seed: catalogue started, 5,000 rows'));
    assert.ok(lines.some((l) => l.startsWith('seed: catalogue done, 5,000 rows in ')));
    assert.ok(lines.some((l) => l.startsWith('seed: statistics done in ')), 'a seed this large refreshes the statistics');
  });
});
