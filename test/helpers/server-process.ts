/**
 * Real `shelfapi serve` processes for tests that cross process boundaries: several servers over one
 * store, SIGKILL and SIGTERM, faults of PostgreSQL and Redis.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { assertNoKeysLogged } from './log-capture.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/**
 * `count` free ports, all different: each is held until all are found. Two freePort() calls in a row can
 * return the same port (the first is let go before the second is asked for), which a server refuses for
 * PORT and OPS_PORT.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => {
              const address = server.address();
              if (typeof address === 'object' && address) resolve(address.port);
              else reject(new Error('no port'));
            });
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()))));
  }
}

export interface ServerProcess {
  port: number;
  opsPort: number;
  base: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let built = false;

/**
 * Compiles src/ to dist/ once per test process (`tsc -b`: well under a second when dist/ is current, which
 * it is whenever `npm test` or one of its passes started the run), so that a test never runs a stale build.
 */
export function ensureBuilt(): void {
  if (built) return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  built = true;
}

/**
 * What a child of the tests keeps of the runner's environment: PATH and HOME, so that no setting in a
 * developer's shell reaches it (npm test's PATH names the Node of its part: scripts/test-node.ts).
 */
export function passedOnEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
}

/**
 * Runs the CLI as users do, `bin/shelfapi.js` over dist/ (built by ensureBuilt), with the given environment
 * over passedOnEnv(). Not from source through tsx: that cost each child about a second of compiling, and the
 * suite starts some two hundred.
 */
export function cliProcess(args: string[], env: Record<string, string>): ChildProcess {
  ensureBuilt();
  return spawn(process.execPath, ['bin/shelfapi.js', ...args], {
    cwd: ROOT,
    env: { ...passedOnEnv(), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * `shelfapi serve` with `env` (and `args`, such as `--workers 2`), on free ports; resolves once /healthz
 * answers. SIGTERM stops it without the drain delay unless `env` sets DRAIN_DELAY_MS.
 */
export async function startServerProcess(env: Record<string, string>, args: string[] = []): Promise<ServerProcess> {
  const [port, opsPort] = (await freePorts(2)) as [number, number];
  // At info level the server logs one line per request: stop() checks that none of them holds a key.
  // STATS_THREAD off unless a test says: a suite runs several servers on one machine, and `auto` counts only
  // a server's own workers (three servers on 2 cores, each with a thread, missed their deadlines in CI).
  const child = cliProcess(['serve', ...args], { LOG_LEVEL: 'info', DRAIN_DELAY_MS: '0', STATS_THREAD: 'off', ...env, PORT: String(port), OPS_PORT: String(opsPort) });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let ended = false;
  void exited.then(() => (ended = true));
  // Generous: a start takes tens of seconds on a loaded machine, and `--workers N` starts N + 1 processes.
  const timeoutMs = args.includes('--workers') ? 240_000 : 90_000;
  const up = waitFor(async () => ended || (await fetch(`http://127.0.0.1:${opsPort}/healthz`)).ok, `server on port ${port}`, timeoutMs).then(() => {
    if (ended) throw new Error('server exited early');
  });
  await up.catch((error: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${output}`);
  });
  return {
    port,
    opsPort,
    base: `http://127.0.0.1:${port}/developer/v1`,
    child,
    output: () => output,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!ended) child.kill(signal);
      const result = await exited;
      const logLines = output.split('\n').filter((line) => line.startsWith('{')).join('\n');
      assertNoKeysLogged(logLines, [], `log of the server on port ${port}`);
      assertNoUnexpectedErrors(logLines, `log of the server on port ${port}`);
      return result;
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a CLI command to its end: exit code, stdout, stderr. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = cliProcess(args, env);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    // 'close', not 'exit': by then stdout and stderr have been read to their end.
    child.once('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
    );
  });
}

/** Fails when a server process answered 500 server_error (it logs 'unexpected error' for each), quoting them. */
function assertNoUnexpectedErrors(logLines: string, where: string): void {
  const unexpected = logLines
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as { msg?: unknown; reqId?: unknown; err?: { message?: unknown } };
      } catch {
        return {};
      }
    })
    .filter((line) => line.msg === 'unexpected error')
    .map((line) => `${String(line.reqId)}: ${String(line.err?.message)}`);
  assert.deepEqual(unexpected, [], `${where}: the server answered 500 server_error (an unexpected error)`);
}
