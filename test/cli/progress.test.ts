// The progress display of long commands (src/cli/progress.ts), driven by hand: a stream that records what is
// written (a terminal when isTTY is true) and a clock the test sets, so throttling, rates and ETAs are exact
// and nothing depends on how fast the machine is.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatClock, progressDisplay, withProgress, type ProgressStream } from '../../src/cli/progress.js';

class Recorder implements ProgressStream {
  readonly writes: string[] = [];
  constructor(
    readonly isTTY: boolean,
    readonly columns?: number,
  ) {}
  write(text: string): boolean {
    this.writes.push(text);
    return true;
  }
  get text(): string {
    return this.writes.join('');
  }
  /** What a terminal shows: \r returns to the margin, ESC[K clears to the end of the line. */
  screen(): string[] {
    const lines: string[] = [];
    let line = '';
    let col = 0;
    const text = this.text.replaceAll('\x1b[K', '\0');
    for (const ch of text) {
      if (ch === '\r') col = 0;
      else if (ch === '\0') line = [...line].slice(0, col).join('');
      else if (ch === '\n') {
        lines.push(line);
        line = '';
        col = 0;
      } else {
        const chars = [...line];
        chars[col] = ch;
        line = chars.join('');
        col++;
      }
    }
    lines.push(line);
    return lines;
  }
}

function clock(start = 1_000_000): { now: () => number; set: (ms: number) => void } {
  let t = start;
  return { now: () => t, set: (ms) => (t = start + ms) };
}

const BAR = /\[([█░]+)\]/;

describe('progress on a terminal', () => {
  it('draws a bar, the percent, counts, rows/s and ETA, then ends with a clean summary line', () => {
    const out = new Recorder(true, 120);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now, label: 'seed' });
    p.start('catalogue', 1000);
    c.set(1000);
    p.update(500);
    const live = out.screen().at(-1)!;
    assert.match(live, /^catalogue {2}\[/, 'the section name, then the bar; no label on a terminal');
    const bar = BAR.exec(live)![1]!;
    assert.equal([...bar].length, 24);
    assert.equal([...bar].filter((ch) => ch === '█').length, 12, 'half the bar filled at 50%');
    assert.match(live, / 50% {2}500\/1,000 rows {2}500 rows\/s {2}ETA 0:01$/);
    assert.ok(out.writes.every((w) => w.startsWith('\r\x1b[K')), 'every draw first returns to the margin and clears the line');
    assert.ok(!out.text.slice(0, -1).includes('\n'), 'a live line is redrawn in place, never a new line');

    c.set(2000);
    p.end(1000);
    assert.ok(out.text.endsWith('\n'), 'the section ends on a new line');
    assert.deepEqual(out.screen(), ['catalogue done, 1,000 rows in 2.0 s (500 rows/s)', '']);
    const before = out.writes.length;
    p.finish();
    assert.equal(out.writes.length, before, 'nothing left to clear after a clean end');
  });

  it('redraws at most every 100 ms however often the work reports', () => {
    const out = new Recorder(true);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now });
    p.start('prices', 10_000);
    for (let i = 1; i <= 99; i++) {
      c.set(i); // 99 reports within 99 ms
      p.update(i * 10);
    }
    assert.equal(out.writes.length, 1, 'only the first draw, at the start');
    c.set(100);
    p.update(1000);
    assert.equal(out.writes.length, 2);
    assert.match(out.screen().at(-1)!, / 10% {2}1,000\/10,000 rows/);
    c.set(150);
    p.update(1100);
    assert.equal(out.writes.length, 2, 'throttled again');
    c.set(250);
    p.update(1200);
    assert.equal(out.writes.length, 3);
  });

  it('with no row total, a fraction from the writer (bytes read) still gives percent and ETA', () => {
    const out = new Recorder(true);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now });
    p.start('prices', null);
    assert.match(out.screen().at(-1)!, /^prices {2}\[░*█{5}░*\]/, 'a moving block while nothing is known');
    c.set(3000);
    p.update(6000, 0.25);
    const live = out.screen().at(-1)!;
    assert.match(live, / 25% {2}6,000 rows {2}2,000 rows\/s {2}ETA 0:09$/, live);
    c.set(12_000);
    p.end(24_000);
    assert.equal(out.screen().at(-2), 'prices done, 24,000 rows in 12.0 s (2,000 rows/s)');
  });

  it('a step without rows (statistics) shows its elapsed time and ends with its duration', () => {
    const out = new Recorder(true);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now });
    p.start('statistics', null);
    c.set(1500);
    p.end(null);
    assert.deepEqual(out.screen(), ['statistics done in 1.5 s', '']);
  });

  it('fits the line to the terminal width: a wrapped line could not be redrawn', () => {
    const out = new Recorder(true, 40);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now });
    p.start('a section with a long name', 1_000_000);
    c.set(5000);
    p.update(123_456);
    for (const w of out.writes) assert.ok([...w.replace('\r\x1b[K', '')].length < 40, w);
  });

  it('a failure mid-section clears the half-drawn line, so the error starts at the margin', async () => {
    const out = new Recorder(true);
    const c = clock();
    await assert.rejects(
      withProgress({ stream: out, clock: c.now }, async (p) => {
        p.start('catalogue', 100);
        c.set(500);
        p.update(40);
        throw new Error('catalogue row 41: bad');
      }),
      /row 41/,
    );
    assert.ok(out.text.endsWith('\r\x1b[K'));
    assert.deepEqual(out.screen(), ['']);
  });

  it('--json (quiet) keeps the bar on a terminal: a person is watching stderr', () => {
    const out = new Recorder(true);
    const p = progressDisplay({ stream: out, clock: clock().now, quiet: true });
    p.start('catalogue', 10);
    p.end(10);
    assert.deepEqual(out.screen(), ['catalogue done, 10 rows in 0.0 s', '']);
  });
});

describe('progress off a terminal (a log, a pipe)', () => {
  it('plain lines: one at the start and end of a section, one per 10% but at most every 5 s, one a minute whatever', () => {
    const out = new Recorder(false);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now, label: 'load' });
    p.start('catalogue', 100_000);
    // 30% within 3 s: a short stretch stays quiet.
    for (let i = 1; i <= 3; i++) {
      c.set(i * 1000);
      p.update(i * 10_000);
    }
    // 5 s and 50%: one line.
    c.set(5000);
    p.update(50_000);
    // 5.5 s and 60%: another 10%, but only half a second later.
    c.set(5500);
    p.update(60_000);
    // Stuck at 60% for a minute: a line shows it is alive.
    c.set(65_000);
    p.update(60_500);
    c.set(70_000);
    p.update(100_000); // 100%: the end line says it
    p.end(100_000);
    p.start('statistics', null);
    c.set(71_000);
    p.end(null);
    p.finish();
    assert.deepEqual(out.text.split('\n'), [
      'load: catalogue started, 100,000 rows',
      'load: catalogue 50,000/100,000 rows, 50%, 10,000 rows/s, ETA 0:05',
      'load: catalogue 60,500/100,000 rows, 60%, 931 rows/s, ETA 0:42',
      'load: catalogue done, 100,000 rows in 1 min 10 s (1,429 rows/s)',
      'load: statistics started',
      'load: statistics done in 1.0 s',
      '',
    ]);
    assert.ok(!out.text.includes('\r') && !out.text.includes('\x1b'), 'no carriage return or escape sequence in a log');
  });

  it('a size known only as a fraction, and a size not known at all', () => {
    const out = new Recorder(false);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now });
    p.start('prices', null);
    c.set(6000);
    p.update(3000, 0.3);
    p.end(10_000);
    p.start('rows', null);
    c.set(66_000);
    p.update(42);
    p.end(42);
    assert.deepEqual(out.text.split('\n'), [
      'prices started',
      'prices 3,000 rows, 30%, 500 rows/s, ETA 0:14',
      'prices done, 10,000 rows in 6.0 s (1,667 rows/s)',
      'rows started',
      'rows 42 rows, 1 rows/s',
      'rows done, 42 rows in 1 min 00 s (1 rows/s)',
      '',
    ]);
  });

  it('quiet (--json off a terminal): nothing at all, so stderr holds only a failure', () => {
    const out = new Recorder(false);
    const c = clock();
    const p = progressDisplay({ stream: out, clock: c.now, quiet: true });
    p.start('catalogue', 10);
    c.set(60_000);
    p.update(5);
    p.end(10);
    p.finish();
    assert.deepEqual(out.writes, []);
  });

  it('lines are held for the first 2 s: written when the work succeeds, dropped when it fails (a refusal stays one line)', async () => {
    const run = async (failAt: number | null) => {
      const out = new Recorder(false);
      const c = clock();
      const work = withProgress({ stream: out, clock: c.now, label: 'import' }, async (p) => {
        p.start('prices', null);
        c.set(1000);
        p.update(2000, 0.5);
        if (failAt !== null) {
          c.set(failAt);
          p.update(3000, 0.75);
          throw new Error('line 3001: bad');
        }
        p.end(4000);
        return 'ok';
      });
      return { out, outcome: await work.catch((e: Error) => e.message) };
    };

    const quick = await run(null);
    assert.equal(quick.outcome, 'ok');
    assert.deepEqual(quick.out.text.split('\n'), ['import: prices started', 'import: prices done, 4,000 rows in 1.0 s (4,000 rows/s)', '']);
    assert.equal(quick.out.writes.length, 2, 'written at the end, in order');

    const refused = await run(1500);
    assert.equal(refused.outcome, 'line 3001: bad');
    assert.deepEqual(refused.out.writes, [], 'a quick failure writes nothing: its reason line stands alone');

    const late = await run(7000);
    assert.equal(late.outcome, 'line 3001: bad');
    assert.deepEqual(late.out.text.split('\n'), [
      'import: prices started',
      'import: prices 3,000 rows, 75%, 429 rows/s, ETA 0:02',
      '',
    ], 'a long run that fails has shown its progress: the lines were already written');
  });
});

describe('formatClock', () => {
  it('m:ss under an hour, h:mm:ss above', () => {
    assert.equal(formatClock(0), '0:00');
    assert.equal(formatClock(61_000), '1:01');
    assert.equal(formatClock(3_723_000), '1:02:03');
  });
});
