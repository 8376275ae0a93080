/**
 * The log of an app under test, kept in memory, and the check every test context makes when it closes: no
 * key it used, nor anything shaped like a key, nor a key's secret part, appears anywhere in the log.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { KEY_PATTERN } from '../../src/keys/api-key.js';

export class LogCapture extends Writable {
  private chunks: string[] = [];

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.chunks.push(chunk.toString());
    callback();
  }

  text(): string {
    return this.chunks.join('');
  }

  /** Every log line, parsed: the log is JSON, one object per line. */
  lines(): Array<Record<string, unknown>> {
    return this.text()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

/** Every percent-escape decoded, again and again, as a reader of the log could (bad escapes kept). */
export function decodeAll(text: string): string {
  let out = text;
  for (let previous = ''; previous !== out; ) {
    previous = out;
    out = out.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
  return out;
}

/**
 * Fails when the log holds any of the keys, their secret parts, or anything shaped like a key, as written
 * or once every percent-escape in it is decoded.
 */
export function assertNoKeysLogged(log: string, keys: Iterable<string>, where: string): void {
  const list = [...keys];
  assertNoKeysIn(log, list, where);
  assertNoKeysIn(decodeAll(log), list, `${where} (percent-decoded)`);
}

function assertNoKeysIn(log: string, keys: string[], where: string): void {
  for (const key of keys) {
    const secret = key.slice(key.indexOf('_live_') + '_live_'.length);
    assert.ok(!log.includes(key), `${where}: a key was written to the log`);
    assert.ok(secret.length < 20 || !log.includes(secret.slice(0, 20)), `${where}: a key's secret part was written to the log`);
  }
  const shaped = log.match(KEY_PATTERN);
  assert.equal(shaped, null, `${where}: something shaped like a key was written to the log`);
}

/** Fails when the app logged an unexpected error (each one answered 500 server_error), quoting them. */
export function assertNoServerErrors(logs: LogCapture): void {
  const unexpected = logs
    .lines()
    .filter((line) => line.msg === 'unexpected error')
    .map((line) => `${String(line.reqId)}: ${String((line.err as { message?: unknown } | undefined)?.message)}`);
  assert.deepEqual(unexpected, [], 'the app answered 500 server_error (an unexpected error) during the test');
}
