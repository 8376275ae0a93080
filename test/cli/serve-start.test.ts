// `shelfapi serve` refusing to start: a port already in use (the API's or the ops port) and a bad worker
// count. Each refusal names what to change, exits non-zero, and happens before the store is opened: no
// file is created, nothing is seeded, no demo key or sign-in link is printed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { assertRefused, cliWorkspace, runCli } from '../helpers/cli-helpers.js';
import { freePort, freePorts } from '../helpers/server-process.js';

const { tmp } = cliWorkspace();

async function occupy(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return { port: address.port, server };
}

describe('serve on a port in use', () => {
  let busy: { port: number; server: Server };
  before(async () => {
    busy = await occupy();
  });
  after(() => busy.server.close());

  it('npm start with PORT in use: names the port and PORT, seeds nothing, prints no key or link', async () => {
    const db = tmp.db('busy-api');
    const opsPort = await freePort();
    const result = await runCli(['serve', '--demo-if-empty'], {
      DATABASE_URL: db,
      PORT: String(busy.port),
      OPS_PORT: String(opsPort),
      // What npm sets for `npm start`: the message then says how to run it again that way.
      npm_lifecycle_event: 'start',
    });
    const line = assertRefused(result);
    assert.match(line, new RegExp(`^shelfapi: port ${busy.port} \\(PORT\\) on 127\\.0\\.0\\.1 is in use: set another with PORT=\\d+ npm start$`));
    const suggested = Number(/PORT=(\d+)/.exec(line)![1]);
    assert.notEqual(suggested, busy.port);
    assert.notEqual(suggested, opsPort, 'not the ops port either');
    assert.equal(existsSync(db), false, 'the store was not even opened');
  });

  it('shelfapi serve with OPS_PORT in use: names OPS_PORT and the command as it was run', async () => {
    const db = tmp.db('busy-ops');
    const result = await runCli(['serve', '--demo-if-empty'], { DATABASE_URL: db, PORT: String(await freePort()), OPS_PORT: String(busy.port) });
    assertRefused(
      result,
      new RegExp(`^shelfapi: port ${busy.port} \\(OPS_PORT\\) on 127\\.0\\.0\\.1 is in use: set another with OPS_PORT=\\d+ shelfapi serve$`),
    );
    assert.equal(existsSync(db), false);
  });

  it('PORT and OPS_PORT the same: refused before anything starts', async () => {
    const db = tmp.db('same-ports');
    const port = String(await freePort());
    const result = await runCli(['serve', '--demo-if-empty'], { DATABASE_URL: db, PORT: port, OPS_PORT: port });
    assertRefused(result, /^shelfapi: OPS_PORT: must differ from PORT \(\d+\)$/);
    assert.equal(existsSync(db), false);
  });
});

describe('serve with a bad worker count', () => {
  const cases: Array<{ args: string[]; env: Record<string, string>; message: RegExp }> = [
    { args: ['--workers', '0'], env: {}, message: /^shelfapi: --workers: expected a whole number from 1 to \d+ or "auto", got "0"$/ },
    { args: ['--workers', 'abc'], env: {}, message: /^shelfapi: --workers: expected a whole number from 1 to \d+ or "auto", got "abc"$/ },
    { args: ['--workers', '2.5'], env: {}, message: /^shelfapi: --workers: expected a whole number/ },
    { args: [], env: { WORKERS: '-1' }, message: /^shelfapi: WORKERS: expected a whole number from 1 to \d+ or "auto", got "-1"$/ },
    { args: [], env: { WORKERS: 'many' }, message: /^shelfapi: WORKERS: expected a whole number/ },
    { args: [], env: { STATS_THREAD: 'yes' }, message: /^shelfapi: STATS_THREAD: expected "on", "off" or "auto", got "yes"$/ },
  ];
  for (const { args, env, message } of cases) {
    it(`${[...args, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)].join(' ')}: refused, nothing opened or seeded`, async () => {
      const db = tmp.db(`workers-${args.join('')}${Object.values(env).join('')}`);
      const [port, opsPort] = await freePorts(2);
      const result = await runCli(['serve', '--demo-if-empty', ...args], {
        DATABASE_URL: db,
        PORT: String(port),
        OPS_PORT: String(opsPort),
        ...env,
      });
      assertRefused(result, message);
      assert.equal(existsSync(db), false);
    });
  }
});
