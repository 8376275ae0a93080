/**
 * What the benches share: the checkout's root, wrk, the built `shelfapi` command, waiting for a server,
 * its peak RSS, counting the rows of a streamed CSV export, clearing a Redis key space, and the meter
 * benches' stream of admissions.
 */
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** wrk from Debian's packages, installed when missing. */
export function ensureWrk(): void {
  if (spawnSync('wrk', ['--version']).error === undefined) return;
  log('wrk is missing: installing it from Debian packages (apt-get install wrk)');
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'wrk'], { stdio: 'inherit' });
}

/** Runs the built `shelfapi <args>` to its end and returns its stdout; its stderr (progress) passes through. */
export function cli(args: string[], env: Record<string, string>): string {
  const result = spawnSync(process.execPath, [join(ROOT, 'bin', 'shelfapi.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (result.status !== 0) throw new Error(`shelfapi ${args.join(' ')} failed`);
  return result.stdout;
}

/** Waits up to a minute for `url` to answer; fails at once when the server process has exited. */
export async function waitUntilUp(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`${url} did not come up`);
}

/** The process's peak resident set (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

/** Streams a CSV export to its end and counts its rows (lines less the header), keeping none of it. */
export function downloadCsvRows(url: string, key: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = request(url, { headers: { 'x-api-key': key } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      let lines = 0;
      res.on('data', (chunk: Buffer) => {
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      });
      res.on('end', () => resolve(lines - 1));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Deletes every key under `prefix` (a bench's private key space) from the Redis at `url`. */
/** The URL of the database `name` on the server of `adminUrl`, created when it is not there. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
  if (exists.rowCount === 0) await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * The meter benches' admissions: each of `batch` asked at once is for a random account of 1..`accounts` (the
 * same seeded sequence every run), on a clock that starts at `start` and moves on `stepMs` an admission.
 * Returns a function that makes `n` more, batch after batch.
 */
export function randomAdmissions(
  options: { accounts: number; batch: number; stepMs: number; start: number },
  admit: (accountId: number, now: number) => Promise<unknown>,
): (n: number) => Promise<void> {
  let clock = options.start;
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x80000000;
  };
  return async (n) => {
    for (let done = 0; done < n; done += options.batch) {
      const batch = [];
      for (let i = 0; i < options.batch; i++) {
        clock += options.stepMs;
        batch.push(admit(1 + Math.floor(random() * options.accounts), Math.floor(clock)));
      }
      await Promise.all(batch);
    }
  };
}
