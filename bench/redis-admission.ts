/**
 * Redis's CPU for the meter's admission alone (RedisMeter.admitChecked with the access check, as a server
 * holding principals admits), per admission: ACCOUNTS accounts with a key each (default 2,000, the tenants
 * scenario's), random accounts on a clock moving STEP_MS an admission (default 0.15: about the rate the
 * server reaches there), BATCH asked at once (default 12: a call's worth at 50 connections), perMinute
 * PER_MINUTE (default 1,000,000,000, the bench's plan: every admission of the last minute stays in its
 * window), after WARMUP admissions (default: 60 s of the clock, the windows full). Prints, for each run,
 * Redis's used CPU (`INFO cpu`: the script, its commands and the socket) and this process's, per admission.
 * Its keys live under a prefix of their own, deleted after. Run it against two trees in turn to compare
 * (TREE=<other worktree>); the machine's speed drifts by minutes, so take turns.
 *
 *   node --import tsx bench/redis-admission.ts     (ADMISSIONS=40000, RUNS=3, REDIS_URL=redis://127.0.0.1:6379)
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { deleteRedisKeys, randomAdmissions } from './bench-support.js';

const TREE = resolve(process.env.TREE ?? join(import.meta.dirname, '..'));
const ACCOUNTS = Number(process.env.ACCOUNTS ?? 2000);
const BATCH = Number(process.env.BATCH ?? 12);
const ADMISSIONS = Number(process.env.ADMISSIONS ?? 40_000);
const RUNS = Number(process.env.RUNS ?? 3);
const STEP_MS = Number(process.env.STEP_MS ?? 0.15);
const PER_MINUTE = Number(process.env.PER_MINUTE ?? 1_000_000_000);
const WARMUP = Number(process.env.WARMUP ?? Math.ceil(60_000 / STEP_MS));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

type Mod = Record<string, unknown>;
const load = (path: string): Promise<Mod> => import(pathToFileURL(join(TREE, path)).href) as Promise<Mod>;
const { RedisMeter } = (await load('src/metering/redis-meter.ts')) as { RedisMeter: new (t: unknown, o: { prefix: string }) => { ready(): Promise<void>; admitChecked(r: unknown, a: unknown): Promise<unknown>; close(): Promise<void> } };
const { accountTag } = (await load('src/metering/redis-keys.ts')) as { accountTag: (p: string, id: number) => string };
const { accessKeysOf } = (await load('src/metering/redis-access-versions.ts')) as { accessKeysOf: (tag: string) => [string, string] };

const prefix = `bench_admission_${process.pid}:`;
const admin = new Redis(REDIS_URL);
const meter = new RedisMeter(REDIS_URL, { prefix });
await meter.ready();
const redisCpu = async () => {
  const info = await admin.info('cpu');
  return ['used_cpu_user', 'used_cpu_sys'].reduce((s, f) => s + Number(new RegExp(`${f}:([0-9.]+)`).exec(info)![1]), 0) * 1e6;
};
try {
  for (let id = 1; id <= ACCOUNTS; id++) await admin.set(accessKeysOf(accountTag(prefix, id))[0], '1');
  const limits = { monthly: 1_000_000_000, perMinute: PER_MINUTE };
  const access = { held: 1, known: null };
  const admitSome = randomAdmissions({ accounts: ACCOUNTS, batch: BATCH, stepMs: STEP_MS, start: Date.now() - 120_000 }, async (id, now) => {
    const admission = await meter.admitChecked({ accountId: id, keyId: id, limits, quota: true, now }, access);
    if (typeof admission !== 'object' || admission === null || !(admission as { burst: { allowed: boolean } }).burst.allowed) {
      throw new Error(`an admission was refused: ${JSON.stringify(admission)}`);
    }
  });
  await admitSome(WARMUP);
  for (let run = 0; run < RUNS; run++) {
    const [r0, c0] = [await redisCpu(), process.cpuUsage()];
    await admitSome(ADMISSIONS);
    const [r1, c] = [await redisCpu(), process.cpuUsage(c0)];
    process.stdout.write(`${TREE} batch=${BATCH} accounts=${ACCOUNTS}: Redis ${((r1 - r0) / ADMISSIONS).toFixed(2)} µs, client ${((c.user + c.system) / ADMISSIONS).toFixed(2)} µs CPU/admission\n`);
  }
} finally {
  await meter.close();
  await deleteRedisKeys(REDIS_URL, prefix);
  await admin.quit();
}
