/**
 * A flush's batch as calls of STATS_WRITE (redis-usage-stats-scripts.ts): each account's hashes grouped (so
 * each expires once) and its other writes, put into calls of up to COMMANDS_PER_CALL on one Redis, a call per
 * account on a cluster (an account's writes are never split between calls, and a script runs whole).
 */
import { storedLineOf } from './request-log-lines.js';
import { outcomeField } from './usage-buckets.js';
import type { StatsBatch } from './usage-stats.js';

/** An hour's period (`2026-11-24T08`) is 13 characters, a day's 10. */
const isHour = (period: string) => period.length === 13;

/** Names a key of an account's statistics (`<prefix>stats:{<account>}:<rest>`). */
export type StatsKeyOf = (accountId: number, ...rest: Array<string | number>) => string;

/**
 * Commands in one call of STATS_WRITE on one Redis: Redis serves no one else while a script runs, so a
 * busy flush (thousands of fields) goes as several calls, each about as long as a pipeline's batch.
 */
const COMMANDS_PER_CALL = 1000;

/** One call of STATS_WRITE being built: its keys (each once) and its operations. */
class StatsCall {
  readonly keys: string[] = [];
  /** Strings only: the script reads them as it would ARGV. */
  readonly args: string[] = [];
  /** The lists' items: ARGV from 2 on. */
  readonly items: string[] = [];
  /** Redis commands the call will run: what COMMANDS_PER_CALL bounds. */
  commands = 0;
  private readonly index = new Map<string, number>();

  private keyOf(key: string): string {
    let i = this.index.get(key);
    if (i === undefined) {
      this.keys.push(key);
      i = this.keys.length;
      this.index.set(key, i);
    }
    return String(i);
  }

  /** Counts added to a day's hash (`H`: an hour's). */
  hincr(key: string, hour: boolean, fields: ReadonlyMap<string, number>): void {
    this.args.push(hour ? 'H' : 'h', this.keyOf(key), String(fields.size));
    for (const [field, by] of fields) this.args.push(field, String(by));
    this.commands += fields.size + 1;
  }

  /** Items pushed onto a key's request log (`l`) or its rejections (`r`). */
  push(list: 'l' | 'r', key: string, items: readonly string[]): void {
    this.args.push(list, this.keyOf(key), String(items.length), String(this.items.length + 2));
    for (const item of items) this.items.push(item);
    this.commands += 3;
  }

  setIfUnset(key: string, value: string): void {
    this.args.push('s', this.keyOf(key), value);
    this.commands += 1;
  }

  lastUse(key: string, keyId: number, at: number, address: string): void {
    this.args.push('u', this.keyOf(key), String(keyId), String(at), address);
    this.commands += 3;
  }

  /** The script's arguments: the number of keys, the keys, the operations as one JSON string, the lists' items. */
  arguments(): string[] {
    return [String(this.keys.length), ...this.keys, JSON.stringify(this.args), ...this.items];
  }
}

/** One account's writes of a flush, before they are put into calls: hashes grouped, so each expires once. */
interface AccountWrites {
  hashes: Map<string, { hour: boolean; fields: Map<string, number> }>;
  emit: Array<(call: StatsCall) => void>;
}

/** The calls of one flush, each with the accounts whose writes it holds. */
export interface StatsCalls {
  calls: Array<{ call: StatsCall; accounts: number[] }>;
  /** How many accounts the flush writes. */
  accounts: number;
  /** Each account's newest day with totals written (for its totals-since). */
  newest: Map<number, string>;
}

/**
 * The calls that write `batch`. `totalsSinceOf(account, its newest day here)`: what the account's
 * `totals-since` is set to unless it is set, null when this writer has set it already.
 */
export function statsCallsOf(batch: StatsBatch, keyOf: StatsKeyOf, totalsSinceOf: (accountId: number, newestDay: string) => string | null, cluster: boolean): StatsCalls {
  const accounts = new Map<number, AccountWrites>();
  const of = (accountId: number): AccountWrites => {
    let writes = accounts.get(accountId);
    if (writes === undefined) {
      writes = { hashes: new Map(), emit: [] };
      accounts.set(accountId, writes);
    }
    return writes;
  };
  const hashOf = (accountId: number, key: string, hour = false): Map<string, number> => {
    const hashes = of(accountId).hashes;
    let hash = hashes.get(key);
    if (hash === undefined) {
      hash = { hour, fields: new Map() };
      hashes.set(key, hash);
    }
    return hash.fields;
  };
  const add = (fields: Map<string, number>, field: string, by: number) => fields.set(field, (fields.get(field) ?? 0) + by);
  // Each account's newest day with totals written here (for its totals-since, below).
  const newest = new Map<number, string>();
  // The rows of one key and period come together (BucketCounts), and a day's total serves all of an
  // account's rows of that day: each hash's key is made and looked up once for them, not once a row.
  let total = { accountId: -1, day: '', fields: new Map<string, number>() };
  const totalOf = (accountId: number, day: string): Map<string, number> => {
    if (total.accountId !== accountId || total.day !== day) {
      total = { accountId, day, fields: hashOf(accountId, keyOf(accountId, 'acct', day)) };
      if (day > (newest.get(accountId) ?? '')) newest.set(accountId, day);
    }
    return total.fields;
  };
  for (const o of batch.outcomes) {
    add(hashOf(o.accountId, keyOf(o.accountId, 'out', o.keyId, o.day)), o.outcome, o.requests);
    add(totalOf(o.accountId, o.day), outcomeField(o.outcome), o.requests);
  }
  let use = { keyId: -1, period: '', fields: new Map<string, number>() };
  for (const b of batch.buckets) {
    if (use.keyId !== b.keyId || use.period !== b.period) {
      const key = keyOf(b.accountId, 'use', b.keyId, b.period);
      use = { keyId: b.keyId, period: b.period, fields: hashOf(b.accountId, key, isHour(b.period)) };
    }
    add(use.fields, b.field, b.requests);
    if (!isHour(b.period)) add(totalOf(b.accountId, b.period), b.field, b.requests);
  }
  // An account's first totals name the first day they are complete for (set only if unset: the first
  // writer's stays): the day after its newest day here, so that servers of a release before, which write
  // no totals, have stopped by then (a rolling restart). It expires as the days do: once it has, no day of
  // the release before is left, and the next flush names a later day (the days between, complete, are
  // filled again from the keys' hashes: the same sums).
  for (const [accountId, day] of newest) {
    const value = totalsSinceOf(accountId, day);
    if (value === null) continue;
    const key = keyOf(accountId, 'totals-since');
    of(accountId).emit.push((call) => call.setIfUnset(key, value));
  }
  for (const u of batch.lastUse) {
    const key = keyOf(u.accountId, 'lastuse');
    of(u.accountId).emit.push((call) => call.lastUse(key, u.keyId, u.at, u.address ?? ''));
  }
  for (const r of batch.rejections) {
    const key = keyOf(r.accountId, 'rejections', r.keyId);
    const items = r.items.map((item) => JSON.stringify(item));
    of(r.accountId).emit.push((call) => call.push('r', key, items));
  }
  for (const l of batch.log) {
    const key = keyOf(l.accountId, 'log', l.keyId);
    // A key unused for 7 days loses its log. A line as an array (request-log-lines.ts), as SQLite stores it.
    const items = l.items.map((item) => JSON.stringify(storedLineOf(item)));
    of(l.accountId).emit.push((call) => call.push('l', key, items));
  }

  // One Redis: the accounts share calls of up to COMMANDS_PER_CALL. A cluster: a call per account (its slot).
  const calls: Array<{ call: StatsCall; accounts: number[] }> = [];
  for (const [accountId, writes] of accounts) {
    let last = calls.at(-1);
    if (last === undefined || cluster || last.call.commands >= COMMANDS_PER_CALL) {
      last = { call: new StatsCall(), accounts: [] };
      calls.push(last);
    }
    last.accounts.push(accountId);
    for (const [key, hash] of writes.hashes) last.call.hincr(key, hash.hour, hash.fields);
    for (const emit of writes.emit) emit(last.call);
  }
  return { calls, accounts: accounts.size, newest };
}
