/**
 * A rolling restart as a load balancer sees it: clients send continuously on kept-alive connections while
 * SIGTERM arrives; the balancer polls /readyz and stops sending once it fails. Every request sent gets an
 * answer (no reset, no refused connection), the answers during the drain close their connections, and the
 * server exits 0. The same with --workers 2.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli, startServerProcess } from '../helpers/server-process.js';

const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000, perMinute: 1_000_000 }, addon: { monthly: 1_000_000, perMinute: 1_000_000 } });
const DRAIN_DELAY_MS = 3_000;
const CLIENTS = 8;

interface Outcome {
  status: number | null;
  connection: string | undefined;
  error: string | null;
  afterSignal: boolean;
}

function get(agent: Agent, port: number, path: string, key: string): Promise<Pick<Outcome, 'status' | 'connection' | 'error'>> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { 'x-api-key': key } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? null, connection: res.headers.connection, error: null }));
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ status: res.statusCode ?? null, connection: undefined, error: error.code ?? error.message }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: null, connection: undefined, error: error.code ?? error.message }));
    req.end();
  });
}

describe('SIGTERM while clients send on kept-alive connections', () => {
  let dir: string;
  let env: Record<string, string>;
  let key: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shelfapi-rolling-'));
    env = { DATABASE_URL: join(dir, 'rolling.sqlite'), PLAN_LIMITS, DRAIN_DELAY_MS: String(DRAIN_DELAY_MS), LOG_LEVEL: 'warn' };
    const seeded = await runCli(['seed', '--demo', '--items', '200', '--json'], env);
    assert.equal(seeded.code, 0, seeded.stderr);
    key = (JSON.parse(seeded.stdout) as { keys: { demo: string } }).keys.demo;
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const args of [[], ['--workers', '2']]) {
    test(`serve ${args.join(' ')}: every request gets an answer, none is reset, exit 0`, async () => {
      const server = await startServerProcess(env, args);
      const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
      const outcomes: Outcome[] = [];
      let signalled = false;
      let balancerStopped = false;
      let readyDuringDrain: number | null = null;
      const clients = Array.from({ length: CLIENTS }, async (_, c) => {
        for (let i = 0; !balancerStopped; i++) {
          const afterSignal = signalled;
          const outcome = await get(agent, server.port, `/developer/v1/catalogue/${1 + ((c * 31 + i) % 200)}`, key);
          outcomes.push({ ...outcome, afterSignal });
        }
      });
      // The load balancer: a health check every 250 ms; it stops sending once /readyz fails.
      const balancer = (async () => {
        while (!balancerStopped) {
          await new Promise((r) => setTimeout(r, 250));
          const ready = await fetch(`http://127.0.0.1:${server.opsPort}/readyz`).then(
            (res) => res.status,
            () => null,
          );
          if (signalled && ready !== 200) {
            readyDuringDrain = ready;
            balancerStopped = true;
          }
        }
      })();
      await new Promise((r) => setTimeout(r, 1_500));
      signalled = true;
      server.child.kill('SIGTERM');
      await Promise.all([...clients, balancer]);
      const exit = await server.exited;
      // Checks the log (no key, no unexpected error); the process has already ended.
      await server.stop();
      agent.destroy();

      // Some ids of the demo catalogue are not published: 404 is an answer too.
      const errors = outcomes.filter((o) => o.error !== null || (o.status !== 200 && o.status !== 404));
      assert.deepEqual(errors, [], `${errors.length} of ${outcomes.length} requests not answered`);
      const during = outcomes.filter((o) => o.afterSignal);
      assert.ok(during.length > 0, 'requests were sent during the drain');
      assert.ok(
        during.some((o) => o.connection === 'close'),
        'answers during the drain close their connections, so clients open new ones (to other servers)',
      );
      assert.equal(readyDuringDrain, 503, '/readyz answers 503 during the drain (the ops port still answers)');
      assert.deepEqual(exit, { code: 0, signal: null });
    });
  }
});
