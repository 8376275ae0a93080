/**
 * Private Redis and PostgreSQL servers that a test starts and stops itself, on spare ports, so that
 * outages can be tested without touching the machine's shared servers.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitFor } from './server-process.js';

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its connections open and answers nothing (a hung host, a long GC pause). */
  pause(): void;
  /** SIGCONT: the server goes on with whatever it had received meanwhile. */
  resume(): void;
  /** Stops the server and removes its directory (the append-only file). */
  destroy(): Promise<void>;
  /** How many times `start` found the append-only file torn and repaired it. */
  repaired(): number;
}

export interface PrivateRedisOptions {
  /**
   * Keep an append-only file, written before each reply (`appendfsync always`): what Redis answered
   * survives a SIGKILL and comes back on `start`. Without it, a restart starts empty. Started as
   * docs/operations.md says: `aof-load-truncated no`, and a tail torn by the kill repaired with
   * `redis-check-aof --fix` before Redis starts again.
   */
  appendfsyncAlways?: boolean;
}

const run = promisify(execFile);

/** `redis-cli -p <port> <args>`: its output; rejects when it cannot connect. */
export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });
  return stdout;
}

export async function startPrivateRedis(options: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  const port = await freePort();
  // Only a persistent Redis writes anything: its own directory, removed by destroy().
  const dir = options.appendfsyncAlways === true ? mkdtempSync(join(tmpdir(), 'shelfapi-redis-')) : null;
  const persistence =
    dir === null ? ['--appendonly', 'no'] : ['--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--aof-load-truncated', 'no'];
  let child: ChildProcess | null = null;
  let repaired = 0;
  const start = async () => {
    for (let attempt = 0; ; attempt++) {
      const starting = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence], {
        stdio: 'ignore',
      });
      child = starting;
      // PONG, not the LOADING error a Redis still reading its file answers (and may yet refuse it).
      await waitFor(async () => starting.exitCode !== null || (await redisCli(port, 'ping')).trim() === 'PONG', `redis on ${port}`);
      if (starting.exitCode === null) return;
      // Refused to load a torn append-only file (a SIGKILL mid-write): repaired as an operator would.
      if (dir === null || attempt > 0) throw new Error(`redis on ${port} exited at start (${starting.exitCode})`);
      repairAppendOnlyFile(dir);
      repaired += 1;
    }
  };
  /** SIGKILL: whatever Redis had not written to its append-only file is gone. */
  const stop = async () => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  };
  const signal = (name: NodeJS.Signals) => {
    const running: ChildProcess | null = child;
    if (running === null) throw new Error('redis is not running');
    running.kill(name);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    repaired: () => repaired,
    async destroy() {
      await stop();
      if (dir !== null) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `redis-check-aof --fix`: cuts the file back to before a transaction the kill left open. Redis's own
 * `aof-load-truncated yes` cuts only the torn command, and the open transaction then swallows the next
 * start's writes (docs/operations.md). It asks before it cuts: the answer comes on stdin.
 */
function repairAppendOnlyFile(dir: string): void {
  execFileSync('redis-check-aof', ['--fix', join(dir, 'appendonlydir', 'appendonly.aof.manifest')], { input: 'y\n', stdio: 'pipe' });
}

function postgresBin(name: string): string {
  const versions = readdirSync('/usr/lib/postgresql').sort();
  return join('/usr/lib/postgresql', versions.at(-1)!, 'bin', name);
}

/** initdb refuses to run as root: the cluster belongs to the postgres user when tests run as root. */
function asPostgres(command: string, args: string[]): void {
  const root = process.getuid?.() === 0;
  if (root) execFileSync('runuser', ['-u', 'postgres', '--', command, ...args], { stdio: 'pipe' });
  else execFileSync(command, args, { stdio: 'pipe' });
}

export interface PrivatePostgres {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP to the postmaster and every backend: connections stay open and nothing answers. */
  pause(): void;
  /** SIGCONT to the same processes. */
  resume(): void;
  destroy(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-pg-'));
  const data = join(dir, 'data');
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  const port = await freePort();
  asPostgres(postgresBin('initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const pgCtl = (action: string, extra: string[] = []) =>
    asPostgres(postgresBin('pg_ctl'), ['-D', data, '-l', join(dir, 'log'), '-w', ...extra, action]);
  const start = async () =>
    pgCtl('start', ['-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`]);
  let paused: number[] = [];
  const resume = () => {
    for (const pid of paused) process.kill(pid, 'SIGCONT');
    paused = [];
  };
  const stop = async () => {
    // A stopped postmaster would never act on pg_ctl's signal.
    resume();
    if (existsSync(join(data, 'postmaster.pid'))) pgCtl('stop', ['-m', 'immediate']);
  };
  /** The postmaster (first line of postmaster.pid) and its children. */
  const processes = (): number[] => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).split('\n').filter((line) => line !== '');
    return [postmaster, ...children.map(Number)];
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    pause() {
      paused = processes();
      for (const pid of paused) process.kill(pid, 'SIGSTOP');
    },
    resume,
    async destroy() {
      await stop();
      if (dir !== null) rmSync(dir, { recursive: true, force: true });
    },
  };
}

