/**
 * Operating a server: health and readiness on the ops port only, and SIGTERM finishing the requests in
 * flight before exiting 0.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

describe('a server on SQLite, run as operators run it', () => {
  let dir: string;
  let env: Record<string, string>;
  let key: string;
  let server: ServerProcess;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shelfapi-ops-'));
    env = { DATABASE_URL: join(dir, 'ops.sqlite') };
    const seeded = await runCli(['seed', '--demo', '--items', '20000', '--json'], env);
    assert.equal(seeded.code, 0, seeded.stderr);
    key = (JSON.parse(seeded.stdout) as { keys: { demo: string } }).keys.demo;
    server = await startServerProcess(env);
  });

  after(async () => {
    await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('/healthz and /readyz answer on OPS_PORT, never on the API port', async () => {
    const health = await fetch(`http://127.0.0.1:${server.opsPort}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`http://127.0.0.1:${server.opsPort}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { store: 'ok', meter: 'ok' });
    for (const path of ['/healthz', '/readyz', '/developer/v1/healthz']) {
      const withoutKey = await fetch(`http://127.0.0.1:${server.port}${path}`);
      assert.equal(withoutKey.status, 401);
      const withKey = await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { 'x-api-key': key } });
      assert.equal(withKey.status, 404);
    }
  });

  test('/metrics on OPS_PORT: requests by route and status, metering outcomes, event-loop delay, memory', async () => {
    const first = await fetch(`${server.base}/catalogue/1`, { headers: { 'x-api-key': key } });
    await fetch(`${server.base}/catalogue/abc`, { headers: { 'x-api-key': key } });
    const etag = first.headers.get('etag') ?? '';
    const revalidated = await fetch(`${server.base}/catalogue/1`, { headers: { 'x-api-key': key, 'if-none-match': etag } });
    assert.equal(revalidated.status, 304);
    const res = await fetch(`http://127.0.0.1:${server.opsPort}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /shelfapi_http_requests_total\{route="\/developer\/v1\/catalogue\/:id",method="GET",status="200"\} 1/);
    assert.match(text, /shelfapi_http_requests_total\{route="\/developer\/v1\/catalogue\/:id",method="GET",status="400"\} 1/);
    assert.match(text, /shelfapi_http_requests_total\{route="\/developer\/v1\/catalogue\/:id",method="GET",status="304"\} 1/);
    assert.match(text, /shelfapi_meter_outcomes_total\{outcome="counted"\} 2/);
    assert.match(text, /shelfapi_meter_outcomes_total\{outcome="not_modified"\} 1/);
    assert.match(text, /shelfapi_http_request_duration_seconds_bucket\{le="0.005",route="\/developer\/v1\/catalogue\/:id"\}/);
    assert.match(text, /nodejs_eventloop_lag_p99_seconds/);
    assert.match(text, /process_resident_memory_bytes/);
    assert.doesNotMatch(text, new RegExp(key));
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/metrics`)).status, 401);
  });

  test('SIGTERM: stops accepting, finishes the export in flight, exits 0', async () => {
    // A client that reads the export slowly keeps the request in flight while the signal arrives.
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: server.port, path: '/developer/v1/prices/export.csv', headers: { 'x-api-key': key } },
        (res) => {
          assert.equal(res.statusCode, 200);
          res.pause();
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          res.on('error', reject);
          // The response has begun: now ask the server to stop, then read the rest.
          server.child.kill('SIGTERM');
          setTimeout(() => {
            fetch(`http://127.0.0.1:${server.port}/developer/v1/me`, { headers: { 'x-api-key': key } }).then(
              () => reject(new Error('a new request was accepted after SIGTERM')),
              () => res.resume(),
            );
          }, 300);
        },
      );
      req.on('error', reject);
      req.end();
    });
    const lines = body.split('\r\n');
    assert.equal(lines[0], 'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate');
    assert.equal(lines.at(-1), '', 'the export ends with CRLF: it was not cut off');
    assert.ok(lines.length > 15_000, `only ${lines.length} lines arrived`);
    const exit = await server.exited;
    assert.deepEqual(exit, { code: 0, signal: null });
  });
});
