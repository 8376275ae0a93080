// The CSV module underpins both the price export and the all-or-nothing price import, so the writer's
// quoting and the parser's strictness and line numbers are pinned down here.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CsvSyntaxError, csvField, csvLine, parseCsv, type CsvRecord } from '../../src/csv/csv.js';

async function collect(input: AsyncIterable<string | Buffer> | Iterable<string>): Promise<CsvRecord[]> {
  const records: CsvRecord[] = [];
  for await (const record of parseCsv(input)) records.push(record);
  return records;
}

async function fields(input: AsyncIterable<string | Buffer> | Iterable<string>): Promise<string[][]> {
  return (await collect(input)).map((r) => r.fields);
}

async function* buffers(...chunks: Buffer[]): AsyncGenerator<Buffer> {
  for (const chunk of chunks) yield chunk;
}

/** Feeds `text` one character at a time, to exercise every state across a piece boundary. */
function byChar(text: string): string[] {
  return [...text];
}

async function syntaxError(input: AsyncIterable<string | Buffer> | Iterable<string>): Promise<CsvSyntaxError> {
  try {
    await collect(input);
  } catch (err) {
    assert.ok(err instanceof CsvSyntaxError, `expected CsvSyntaxError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a CsvSyntaxError');
}

describe('csvField', () => {
  it('writes plain values as they are', () => {
    assert.equal(csvField('Super Mario 64'), 'Super Mario 64');
    assert.equal(csvField(''), '');
    assert.equal(csvField(' padded '), ' padded ');
    assert.equal(csvField('Pokémon'), 'Pokémon');
  });

  it('writes null as an empty field', () => {
    assert.equal(csvField(null), '');
  });

  it("writes numbers with JavaScript's default formatting", () => {
    assert.equal(csvField(10.5), '10.5');
    assert.equal(csvField(0), '0');
    assert.equal(csvField(99.99), '99.99');
    assert.equal(csvField(123456789012), '123456789012');
    assert.equal(csvField(-3), '-3');
  });

  it('quotes a comma', () => {
    assert.equal(csvField('Zelda, The'), '"Zelda, The"');
  });

  it('quotes and doubles a quote', () => {
    assert.equal(csvField('12" vinyl'), '"12"" vinyl"');
    assert.equal(csvField('"'), '""""');
  });

  it('quotes CR and LF', () => {
    assert.equal(csvField('a\rb'), '"a\rb"');
    assert.equal(csvField('a\nb'), '"a\nb"');
    assert.equal(csvField('a\r\nb'), '"a\r\nb"');
  });
});

describe('csvLine', () => {
  it('joins fields with commas and ends with CRLF', () => {
    assert.equal(csvLine([1, 'Zelda, The', null, 10.5, '']), '1,"Zelda, The",,10.5,\r\n');
    assert.equal(csvLine(['masterItemId', 'name']), 'masterItemId,name\r\n');
  });
});

describe('parseCsv', () => {
  it('reads back what the writer wrote, nasty values included', async () => {
    const rows: (string | number | null)[][] = [
      ['masterItemId', 'name', 'note'],
      [1, 'Zelda, The', '12" "vinyl"'],
      [2, 'multi\r\nline\nfield\rwith CR', '"'],
      [3, '""', ',,,'],
      [4, ' spaced ', 'Pokémon 🎮'],
      [5, null, 0.1 + 0.2],
      [6, '\r\n', '\n'],
    ];
    const text = rows.map(csvLine).join('');
    const expected = rows.map((row) => row.map((v) => (v === null ? '' : String(v))));
    assert.deepEqual(await fields([text]), expected);
    assert.deepEqual(await fields(byChar(text)), expected);
    assert.deepEqual(await fields(buffers(Buffer.from(text))), expected);
  });

  it('tells quoted fields from unquoted ones', async () => {
    const [record] = await collect(['"",,"a",b\r\n']);
    assert.deepEqual(record?.fields, ['', '', 'a', 'b']);
    assert.deepEqual(record?.quoted, [true, false, true, false]);
  });

  it('numbers records from 1, header included, and gives the line each starts on', async () => {
    const text = 'h1,h2\r\n1,"two\r\nlines"\r\n2,"three\nlines\n!"\r\n3,x\r\n';
    const records = await collect([text]);
    assert.deepEqual(
      records.map((r) => [r.record, r.line]),
      [
        [1, 1],
        [2, 2],
        [3, 4],
        [4, 7],
      ],
    );
    assert.deepEqual(records[2]?.fields, ['2', 'three\nlines\n!']);
    assert.deepEqual(await collect(byChar(text)), records);
  });

  it('accepts bare LF line ends, and a mix', async () => {
    assert.deepEqual(await fields(['a,b\nc,d\n']), [
      ['a', 'b'],
      ['c', 'd'],
    ]);
    const records = await collect(['a,b\r\nc,d\ne,f\r\n']);
    assert.deepEqual(
      records.map((r) => [r.fields, r.line]),
      [
        [['a', 'b'], 1],
        [['c', 'd'], 2],
        [['e', 'f'], 3],
      ],
    );
  });

  it('accepts a last line without a line end', async () => {
    assert.deepEqual(await fields(['a,b\r\nc,d']), [
      ['a', 'b'],
      ['c', 'd'],
    ]);
    assert.deepEqual(await fields(['a,"b"']), [['a', 'b']]);
    assert.deepEqual(await fields(['a,']), [['a', '']]);
    assert.deepEqual(await fields(['a,b\r']), [['a', 'b']]);
  });

  it('ignores a UTF-8 byte order mark at the start only', async () => {
    assert.deepEqual(await fields(['\uFEFFa,b\r\n']), [['a', 'b']]);
    assert.deepEqual(await fields(['', '\uFEFF', 'a,b\r\n']), [['a', 'b']]);
    assert.deepEqual(await fields(buffers(Buffer.from([0xef, 0xbb]), Buffer.from([0xbf, 0x61, 0x0a]))), [['a']]);
    assert.deepEqual(await fields(['a,\uFEFFb\r\n']), [['a', '\uFEFFb']]);
  });

  it('decodes multi-byte characters split across Buffer chunks', async () => {
    const bytes = Buffer.from('name\r\nPokémon,"Café ""🎮"""\r\n');
    const eAcute = bytes.indexOf(Buffer.from('é'));
    const expected = [['name'], ['Pokémon', 'Café "🎮"']];
    // In the middle of é.
    assert.deepEqual(
      await fields(buffers(bytes.subarray(0, eAcute + 1), bytes.subarray(eAcute + 1))),
      expected,
    );
    // Every split point, and one byte at a time.
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(await fields(buffers(bytes.subarray(0, cut), bytes.subarray(cut))), expected, `cut ${cut}`);
    }
    const single = [...bytes].map((b) => Buffer.from([b]));
    assert.deepEqual(await fields(buffers(...single)), expected);
  });

  it('keeps a blank line in the middle as a record of one empty field and drops blank lines at the end', async () => {
    const records = await collect(['a,b\r\n\r\nc,d\n\n\r\n\n']);
    assert.deepEqual(
      records.map((r) => [r.fields, r.quoted, r.line, r.record]),
      [
        [['a', 'b'], [false, false], 1, 1],
        [[''], [false], 2, 2],
        [['c', 'd'], [false, false], 3, 3],
      ],
    );
    assert.deepEqual(await collect(['']), []);
    assert.deepEqual(await collect(['\r\n\n']), []);
  });

  it('refuses an unterminated quoted field, naming the line the quote opened on', async () => {
    const err = await syntaxError(['h\r\nok\r\n"never\r\nclosed\r\n']);
    assert.equal(err.line, 3);
    assert.equal(err.message, 'line 3: unterminated quoted field');
    assert.equal(err.name, 'CsvSyntaxError');
    assert.equal((await syntaxError(byChar('a,"b'))).line, 1);
  });

  it('refuses a quote inside an unquoted field', async () => {
    const err = await syntaxError(['h\r\n1,ok\r\n2,12" vinyl\r\n']);
    assert.equal(err.line, 3);
    assert.match(err.message, /^line 3: quote inside an unquoted field/);
    assert.equal((await syntaxError(byChar('a\nb\nc, "d"\n'))).line, 3);
  });

  it('refuses characters after a closing quote', async () => {
    const err = await syntaxError(['h\r\n"multi\r\nline"x,1\r\n']);
    assert.equal(err.line, 3);
    assert.match(err.message, /^line 3: character after a closing quote/);
    assert.equal((await syntaxError(byChar('"a" ,b'))).line, 1);
  });

  it('refuses a CR that is not followed by LF outside quotes', async () => {
    const err = await syntaxError(['a\r\nb\rc\r\n']);
    assert.equal(err.line, 2);
    assert.match(err.message, /^line 2: carriage return not followed by a line feed/);
  });

  it('refuses invalid UTF-8, naming its line', async () => {
    const bad = Buffer.concat([Buffer.from('h\r\nok\r\nbad '), Buffer.from([0xff]), Buffer.from('\r\n')]);
    const err = await syntaxError(buffers(bad));
    assert.equal(err.line, 3);
    assert.match(err.message, /^line 3: invalid UTF-8/);
    // A sequence cut short by the end of input.
    const cut = Buffer.from('a\nPok\u00e9');
    assert.equal((await syntaxError(buffers(cut.subarray(0, cut.length - 1)))).line, 2);
  });

  it('yields the records before a syntax error, then throws', async () => {
    const seen: string[][] = [];
    await assert.rejects(async () => {
      for await (const record of parseCsv(['a\r\nb\r\n"c'])) seen.push(record.fields);
    }, CsvSyntaxError);
    assert.deepEqual(seen, [['a'], ['b']]);
  });

  it('parses a 200,000-line input', async () => {
    const header = csvLine(['masterItemId', 'name', 'slug', 'platform', 'category', 'upc', 'loose', 'cib']);
    const lines = [header];
    for (let i = 1; i < 200_000; i++) {
      lines.push(csvLine([i, `Item ${i}, "deluxe"`, `item-${i}`, 'N64', 'game', '045496830434', i / 100, null]));
    }
    // Chunks of a read stream's usual size, cutting records and fields anywhere.
    const all = Buffer.from(lines.join(''));
    const chunks: Buffer[] = [];
    for (let at = 0; at < all.length; at += 65536) chunks.push(all.subarray(at, at + 65536));

    let count = 0;
    let last: CsvRecord | undefined;
    for await (const record of parseCsv(buffers(...chunks))) {
      count++;
      last = record;
    }
    assert.equal(count, 200_000);
    assert.deepEqual(last?.fields, ['199999', 'Item 199999, "deluxe"', 'item-199999', 'N64', 'game', '045496830434', '1999.99', '']);
    assert.equal(last?.line, 200_000);
    assert.equal(last?.record, 200_000);
  });
});
