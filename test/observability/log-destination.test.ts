// The server's log when whatever reads it stops reading: what waits to be written stays bounded (lines past
// the bound are dropped and counted), where pino's default destination kept every line in the heap until
// the reader caught up (issue 10, item 8: a stalled log reader under load grew the heap without end).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { boundedLogDestination } from '../../src/observability/log-destination.js';

const LINES = 20_000;
const MAX_BYTES = 256 * 1024;

/** Reads what is in the pipe now, without waiting (the read end is non-blocking). */
function readAvailable(fd: number): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(64 * 1024);
  for (;;) {
    try {
      const n = readSync(fd, buffer);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw error;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

describe('the log destination of a serving process', { skip: process.platform === 'win32' && 'needs a named pipe' }, () => {
  let dir: string;
  let readEnd: number;
  let writeEnd: number;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'shelfapi-log-'));
    const fifo = join(dir, 'log');
    execFileSync('mkfifo', [fifo]);
    // The reader opens first (non-blocking, so opening does not wait for a writer), then the writer.
    readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    writeEnd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  });
  after(() => {
    closeSync(readEnd);
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps at most its bound waiting while nobody reads, counts what it drops, and delivers the rest whole', async () => {
    let dropped = 0;
    const destination = boundedLogDestination({ fd: writeEnd, maxBytes: MAX_BYTES, onDrop: () => dropped++ });
    const logger = pino({ base: null, timestamp: false }, destination);
    // Nobody reads: the pipe takes 64 KiB, the destination holds up to its bound, the rest is dropped.
    for (let i = 0; i < LINES; i++) logger.info({ i, url: '/developer/v1/catalogue/123456' }, 'request');
    assert.ok(dropped > LINES / 2, `dropped ${dropped} of ${LINES} lines`);

    // The reader comes back: every line that was not dropped arrives, whole and in order.
    let text = '';
    const deadline = Date.now() + 30_000;
    while (text.split('\n').length - 1 < LINES - dropped && Date.now() < deadline) {
      text += readAvailable(readEnd);
      await sleep(20);
    }
    destination.end();
    // What was kept is what waited in the process: at most the bound (plus a line being written).
    assert.ok(Buffer.byteLength(text) <= MAX_BYTES + 1024, `kept ${Buffer.byteLength(text)} bytes`);
    const lines = text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { i: number; msg: string });
    assert.equal(lines.length + dropped, LINES);
    assert.deepEqual(
      lines.map((line) => line.i),
      Array.from({ length: lines.length }, (_, i) => i),
      'the first lines are kept, the ones past the bound dropped',
    );
  });
});
