/**
 * The client's CSV reader: it reads what the server's writer writes, wherever the network cuts the bytes,
 * and refuses malformed quoting with the line at fault rather than guessing (a guess would shift prices
 * into the wrong columns).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { csvLine } from '../../../src/csv/csv.js';
import { CsvSyntaxError, csvRecords, PRICE_CSV_COLUMNS, priceRows } from '../src/index.js';

async function* bytesIn(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function records(text: string, size = 1 << 16): Promise<string[][]> {
  const out: string[][] = [];
  for await (const record of csvRecords(bytesIn(text, size))) out.push(record);
  return out;
}

/** The error reading `text` fails with. */
async function refusal(text: string): Promise<CsvSyntaxError> {
  try {
    await records(text);
  } catch (error) {
    assert.ok(error instanceof CsvSyntaxError, `a CsvSyntaxError, got ${String(error)}`);
    return error;
  }
  assert.fail(`expected ${JSON.stringify(text)} to be refused`);
}

const TRICKY: (string | number | null)[][] = [
  ['masterItemId', 'name', 'loose'],
  [1, 'Plain', 12.5],
  [2, 'Hey You, Pikachu!', null],
  [3, 'The "Crimson" Blade', 7],
  [4, '"Hey, Golem!" 100% Café_Edition', 0.99],
  [5, 'Two\r\nlines and\na bare LF', 3],
  [6, '', ''],
  [7, 'Pokémon Über 日本', 1],
];
const asRead = (row: (string | number | null)[]): string[] => row.map((v) => (v === null ? '' : String(v)));

describe('csvRecords', () => {
  test("reads the server's writer back, however the bytes are cut", async () => {
    const text = TRICKY.map(csvLine).join('');
    const expected = TRICKY.map(asRead);
    assert.deepEqual(await records(text), expected);
    // Every chunk size from one byte up, so a cut lands inside quotes, on a doubled quote, between CR and
    // LF and inside a multi-byte character.
    for (let size = 1; size <= 40; size++) assert.deepEqual(await records(text, size), expected, `chunks of ${size}`);
  });

  test('a final line end yields no empty record; a blank line inside is a record of one empty field', async () => {
    assert.deepEqual(await records('a,b\r\n'), [['a', 'b']]);
    assert.deepEqual(await records('a,b'), [['a', 'b']]);
    assert.deepEqual(await records('a\n\nb\n'), [['a'], [''], ['b']]);
    assert.deepEqual(await records('a,\r\n,b'), [['a', ''], ['', 'b']]);
    assert.deepEqual(await records(''), []);
  });

  test('refuses a quote inside an unquoted field, naming the line', async () => {
    const error = await refusal('a,b\r\nc,d\r\n12" Figure,3\r\n');
    assert.equal(error.line, 3);
    assert.match(error.message, /^line 3: /);
    assert.match(error.message, /quote inside an unquoted field/);
    assert.equal((await refusal('a,b"c\n')).line, 1);
  });

  test('refuses text after a closing quote, naming the line', async () => {
    const error = await refusal('a,b\r\n"first\r\nsecond"x,1\r\n');
    // The quoted field spans lines 2 and 3; the stray character is on line 3.
    assert.equal(error.line, 3);
    assert.match(error.message, /^line 3: .*after a closing quote/);
    assert.equal((await refusal('"a" ,b\n')).line, 1);
  });

  test('refuses a quoted field still open at the end of input, naming the line it opened on', async () => {
    const error = await refusal('a,b\r\n1,"cut short\r\nhere');
    assert.equal(error.line, 2);
    assert.match(error.message, /^line 2: unterminated quoted field/);
    assert.equal((await refusal('a,"')).line, 1);
  });

  test('accepts a closing quote at the very end, and an empty quoted field', async () => {
    assert.deepEqual(await records('"a","b""c"'), [['a', 'b"c']]);
    assert.deepEqual(await records('"",x\r\n'), [['', 'x']]);
  });
});

describe('priceRows', () => {
  const header = csvLine([...PRICE_CSV_COLUMNS]);
  const line = csvLine([3, 'Rock, Paper, "Golem"', 'rock-paper-golem-nes-3', 'NES', 'game', '012345678905', 12.5, null, 80,
    null, null, '2026-03-01T10:00:00.000Z']);

  test('reads the export into the objects /prices returns', async () => {
    const rows = [];
    for await (const row of priceRows(bytesIn(header + line, 7))) rows.push(row);
    assert.deepEqual(rows, [{
      masterItemId: 3, name: 'Rock, Paper, "Golem"', slug: 'rock-paper-golem-nes-3', platform: 'NES', category: 'game',
      upc: '012345678905', loose: 12.5, cib: null, new: 80, boxOnly: null, manualOnly: null,
      scrapeDate: '2026-03-01T10:00:00.000Z',
    }]);
  });

  test('stops at malformed quoting after the rows before it, naming the line', async () => {
    const seen: number[] = [];
    await assert.rejects(async () => {
      for await (const row of priceRows(bytesIn(`${header}${line}4,Bad "name,x,NES,game,1,1,1,1,1,1,2026-03-01\r\n`, 1 << 16))) {
        seen.push(row.masterItemId);
      }
    }, (error: unknown) => error instanceof CsvSyntaxError && error.line === 3);
    assert.deepEqual(seen, [3]);
  });
});
