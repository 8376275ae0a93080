// `npm start` in a terminal: the server's log reads as lines a person can follow (time, level, message,
// fields), not JSON, and a key a client put in the URL is cut out of them as it is from the JSON lines.
// The server runs under `script`, which gives it a terminal as standard output.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { ensureBuilt, freePorts, passedOnEnv, ROOT, waitFor } from '../helpers/server-process.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

let ctx: TestContext;
let server: ChildProcess;
let output = '';
let port: number;

before(async () => {
  ctx = await createTestContext();
  const ports = await freePorts(2);
  port = ports[0]!;
  const opsPort = ports[1]!;
  ensureBuilt();
  const command = `${process.execPath} bin/shelfapi.js serve`;
  server = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...passedOnEnv(), DATABASE_URL: ctx.databaseUrl, PORT: String(port), OPS_PORT: String(opsPort), LOG_LEVEL: 'info' },
  });
  server.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  server.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  await waitFor(async () => (await fetch(`http://127.0.0.1:${opsPort}/healthz`)).ok, `server on ${port}\n${output}`, 90_000);
});
after(async () => {
  if (server?.pid !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    process.kill(-server.pid, 'SIGTERM');
    await exited;
  }
  await ctx?.close();
});

test('on a terminal the log is pretty, and a key in a URL is cut out of it', async () => {
  const key = ctx.loaded.keys.alice!;
  assert.equal((await fetch(`http://127.0.0.1:${port}${V1}/catalogue/1`, { headers: { 'x-api-key': key } })).status, 200);
  // A key pasted where an id goes: refused, and its URL logged.
  assert.equal((await fetch(`http://127.0.0.1:${port}${V1}/catalogue/${key}`, { headers: { 'x-api-key': key } })).status, 400);
  await waitFor(async () => (output.match(/request/g) ?? []).length >= 2, 'the two request lines');
  // eslint-disable-next-line no-control-regex
  const text = output.replace(/\u001b\[[0-9;]*m/g, '');
  const line = text.split(/\r?\n/).find((l) => /INFO.*request/.test(l));
  assert.ok(line, `a request line with its level as a word:\n${text}`);
  assert.match(line, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO/, 'starts with the time and the level');
  assert.doesNotMatch(text, /^\{"level"/m, 'no JSON line');
  assert.ok(text.includes('status: 200'), `the fields follow, one a line:\n${text}`);
  assert.ok(!text.includes(key), 'the key is not in the log');
  assert.match(text, /url: "\/developer\/v1\/catalogue\/\[redacted/, `the URL is logged without the key:\n${text}`);
});
