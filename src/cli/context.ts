/** What every command shares: configuration, a store opened and closed around the work, output helpers. */
import { systemClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { createMeter } from '../metering/create-meter.js';
import type { Meter } from '../metering/meter.js';
import { migrateToLatest, openStore, type Store } from '../store/database.js';
import { InputError } from '../errors/input-error.js';
import { BadRowsError, badRowsJson, badRowsSummary } from '../errors/bad-rows.js';
import { registerAccessFence } from '../metering/access-change.js';
import { redisTargetOf } from '../metering/redis-client.js';
import { RedisMeter } from '../metering/redis-meter.js';

export interface CommandContext {
  config: Readonly<Config>;
  store: Store;
  now: number;
}

/** Opens the configured store (migrated), runs the work, and always closes the store. */
export async function withStore<T>(work: (ctx: CommandContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // No per-query timeout: a command's bulk statements may run for seconds on a large store.
  const store = openStore(config.database, { queryTimeoutMs: null });
  // PostgreSQL + Redis: a change of a key or a plan reaches the servers' Redis before the command returns
  // (metering/access-change.ts). Connected at the first such change only.
  const target = redisTargetOf(config);
  let redis: RedisMeter | null = null;
  if (store.dialect === 'postgres' && target !== null) {
    const fenceRedis = () => (redis ??= new RedisMeter(target, { prefix: config.redisKeyPrefix }));
    registerAccessFence(store, {
      markChanging: (accountId) => fenceRedis().markChanging(accountId),
      settleChange: (accountId, token, version) => fenceRedis().settleChange(accountId, token, version),
    });
  }
  try {
    await migrateToLatest(store);
    return await work({ config, store, now: systemClock.now() });
  } finally {
    await (redis as RedisMeter | null)?.close();
    await store.close();
  }
}

export async function withMeter<T>(ctx: CommandContext, work: (meter: Meter) => Promise<T>): Promise<T> {
  const meter = await createMeter(ctx.config, ctx.store);
  try {
    return await work(meter);
  } finally {
    await meter.close();
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function print(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** A positive whole number from an option or argument, or an InputError naming it. */
export function positiveInt(name: string, raw: string): number {
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > Number.MAX_SAFE_INTEGER) {
    throw new InputError(`${name} must be a whole number >= 1, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/**
 * Runs a command that reads a file whole (`load`, `import prices`). With --json a file refused for its bad
 * rows prints them on stdout as one JSON document ({ "errors": [...], "more": N }) and the command fails
 * with one line on stderr; without it every bad row is a line on stderr (main.ts).
 */
export async function refusingRows<T>(json: boolean, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!json || !(error instanceof BadRowsError)) throw error;
    printJson(badRowsJson(error));
    throw new InputError(`${badRowsSummary(error)} (listed on standard output)`);
  }
}
