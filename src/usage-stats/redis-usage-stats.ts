/**
 * Per-key statistics in Redis (when REDIS_URL or REDIS_CLUSTER_URLS is set). Every key of one account
 * carries the hash tag `{<account id>}`, so an account's statistics share one hash slot (beside its meter on
 * a Redis Cluster). A flush is a few calls of one script (STATS_WRITE) on one Redis, one call per account on
 * a cluster, all sent at once: HINCRBY per key, day and outcome; the last use kept only if newer (so servers
 * writing out of order cannot move it back); LPUSH + LTRIM for the rejections and for the request log (100
 * lines, 7 days); HINCRBY per key, period (hour or day) and field for the usage buckets. Everything expires.
 * A script rather than a pipeline of those commands: a busy server's flush touches ~8 hashes and lists per
 * request at a thousand keys, and each command sent through ioredis cost the server's process ~4 µs (its
 * command object, its arguments written, its reply parsed and settled): a third of the client's share of a
 * PostgreSQL + Redis item GET (docs/performance.md). The operations go as one JSON argument, which the
 * script decodes with Redis's own cjson: as separate arguments (~15 a request) ioredis wrote each into a
 * string of its own, and the flush cost a request as much CPU again as the rest of its statistics.
 * Reads of many days or keys (the day outcomes, usage in depth) sum their hashes in a script, 100 hashes a call.
 * The scripts' text is redis-usage-stats-scripts.ts; a flush's calls are built by redis-stats-writes.ts.
 *
 * The account's day totals (`acct:<day>`: the day buckets' fields and the outcomes as `o:<outcome>`, summed
 * over its keys) are written in the same call as its keys' counts (an account's writes are never split
 * between calls, and a script runs whole), so that the overview's 90 days read 90 hashes, not 20 keys x 90.
 * An account's totals are complete from the day named by its `totals-since` (set once, by the first flush
 * of a release that writes totals: the day after the account's newest record in it, so that a release
 * before, still running during a rolling restart, has stopped writing by then). The day before it is read
 * as the sum of the shown keys' hashes, as before; older days (written before the upgrade) have their
 * total filled from the keys' hashes the first time they are read, in one script, then read as one hash.
 *
 * Per account on a cluster, because a script runs on one master only and different accounts' slots lie
 * on different masters. When some accounts' pipelines fail (their master is away), only their records are
 * kept for the next flush; the others are written once.
 */
import { Cluster } from 'ioredis';
import { connectRedis, redisReady, type RedisTarget, type ScriptedRedis } from '../metering/redis-client.js';
import { logLineOfItem } from './request-log-lines.js';
import { daysBetween } from '../metering/periods.js';
import { BufferedUsageStats, StatsWriteError } from './buffered-usage-stats.js';
import { COMPLETE, DAYS_KEPT_S, SCRIPTS, SUM_KEYS_PER_CALL } from './redis-usage-stats-scripts.js';
import { statsCallsOf } from './redis-stats-writes.js';
import { addField, outcomesByDay, REJECTIONS_KEPT, REQUEST_LOG_KEPT, type DayOutcomes, type LastUse, type Rejection, type RequestLogEntry, type StatsBatch } from './usage-stats.js';

const COMMAND_TIMEOUT_MS = 1000;
/** Accounts whose `totals-since` a process holds (read) or knows it set (written); past this, it starts again. */
const TOTALS_SINCE_HELD = 10_000;

/** The day after `day` (`2026-11-24` -> `2026-11-25`), and the day before. */
const dayAfter = (day: string) => new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString().slice(0, 10);
const dayBefore = (day: string) => new Date(Date.parse(`${day}T00:00:00.000Z`) - 86_400_000).toISOString().slice(0, 10);

export class RedisUsageStats extends BufferedUsageStats {
  private readonly redis: ScriptedRedis<keyof typeof SCRIPTS>;
  private readonly prefix: string;

  /**
   * Per account, the first day whose totals are complete, once read (it never moves back: a Redis emptied
   * since holds no day written without totals). At most TOTALS_SINCE_HELD accounts.
   */
  private readonly totalsSince = new Map<number, string>();
  /** Accounts whose `totals-since` this writer has set (or found set). */
  private readonly marked = new Set<number>();
  /** The day this writer sets an account's `totals-since` to if none is: null, the day after the account's newest day in the flush. */
  private readonly totalsFrom: string | null;

  /** `commandTimeoutMs`: how long a command may take before it is given up on (default COMMAND_TIMEOUT_MS). */
  constructor(target: RedisTarget, options: { prefix?: string; totalsCompleteFrom?: string; commandTimeoutMs?: number } = {}) {
    super();
    this.prefix = options.prefix ?? 'shelfapi:';
    this.totalsFrom = options.totalsCompleteFrom ?? null;
    // Connection errors surface as failed flushes (records kept) or failed reads; the client reconnects.
    this.redis = connectRedis(target, { scripts: SCRIPTS, connectTimeoutMs: COMMAND_TIMEOUT_MS, commandTimeoutMs: options.commandTimeoutMs ?? COMMAND_TIMEOUT_MS });
  }

  ready(timeoutMs = 5000): Promise<void> {
    return redisReady(this.redis, timeoutMs);
  }

  /** `<prefix>stats:{<account>}:<rest>`: the braces make Redis Cluster hash only the account id. */
  private readonly key = (accountId: number, ...rest: Array<string | number>): string => `${this.prefix}stats:{${accountId}}:${rest.join(':')}`;

  /** The first day whose account totals are complete, or null when no release writing them has written for the account yet. */
  private async totalsCompleteSince(accountId: number): Promise<string | null> {
    const held = this.totalsSince.get(accountId);
    if (held !== undefined) return held;
    const since = await this.redis.get(this.key(accountId, 'totals-since'));
    if (since !== null) {
      if (this.totalsSince.size >= TOTALS_SINCE_HELD) this.totalsSince.clear();
      this.totalsSince.set(accountId, since);
    }
    return since;
  }

  protected async write(batch: StatsBatch): Promise<void> {
    const { calls, accounts, newest } = statsCallsOf(
      batch,
      this.key,
      (accountId, day) => (this.marked.has(accountId) ? null : (this.totalsFrom ?? dayAfter(day))),
      this.redis instanceof Cluster,
    );
    // One array argument (ioredis flattens it): an account's flush after an outage can hold 100,000 records,
    // too many keys to spread into a call ("Maximum call stack size exceeded"). A turn of the event loop
    // between calls: the client turns each call's thousands of arguments into the protocol at once, and a
    // busy flush of 10,000 accounts' calls held the request thread 30-50 ms (docs/performance.md).
    const sent: Array<Promise<unknown>> = [];
    for (const { call } of calls) {
      if (sent.length > 0) await new Promise((resolve) => setImmediate(resolve));
      const written = this.redis.statsWrite(call.arguments());
      // Handled now, read below: a call that fails while the next is built is not an unhandled rejection.
      written.catch(() => {});
      sent.push(written);
    }
    const settled = await Promise.allSettled(sent);
    const failed = new Set<number>();
    let first: unknown;
    settled.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') return;
      first ??= outcome.reason;
      for (const accountId of calls[i]!.accounts) failed.add(accountId);
    });
    if (this.marked.size >= TOTALS_SINCE_HELD) this.marked.clear();
    for (const accountId of newest.keys()) if (!failed.has(accountId)) this.marked.add(accountId);
    if (failed.size === 0) return;
    // Only the accounts whose call failed are kept for the next flush: the others' calls ran.
    if (failed.size === accounts) throw first;
    throw new StatsWriteError(first, failed);
  }

  async keyOutcomes(accountId: number, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    return this.keysOutcomes(accountId, [keyId], sinceDay, untilDay);
  }

  async keysOutcomes(accountId: number, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    const days = daysBetween(sinceDay, untilDay);
    if (days.length === 0) return [];
    // Day by day, so that a call's hashes share few groups (its reply is one day's sums, not 20 keys' rows).
    const keys = days.flatMap((day) => keyIds.map((keyId) => ({ key: this.key(accountId, 'out', keyId, day), group: day })));
    const stored = [];
    for (const [day, fields] of await this.sumHashes(keys)) for (const [outcome, requests] of fields) stored.push({ day, outcome, requests });
    return outcomesByDay(sinceDay, untilDay, stored);
  }

  /** The hashes `keys` (of one account) summed field by field per group, SUM_KEYS_PER_CALL a script call. */
  private async sumHashes(keys: ReadonlyArray<{ key: string; group: string }>): Promise<Map<string, Map<string, number>>> {
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < keys.length; i += SUM_KEYS_PER_CALL) {
      const some = keys.slice(i, i + SUM_KEYS_PER_CALL);
      calls.push(this.redis.statsSumHashes(some.length, ...some.map((k) => k.key), ...some.map((k) => k.group)));
    }
    const out = new Map<string, Map<string, number>>();
    for (const joined of (await Promise.all(calls)) as string[]) {
      const reply = joined.split('\0');
      for (let i = 0; i + 2 < reply.length; i += 3) {
        const group = reply[i]!;
        const field = reply[i + 1]!;
        const fields = out.get(group) ?? new Map<string, number>();
        fields.set(field, (fields.get(field) ?? 0) + Number(reply[i + 2]));
        out.set(group, fields);
      }
    }
    return out;
  }

  async recentRejections(accountId: number, keyId: number): Promise<Rejection[]> {
    const items = await this.redis.lrange(this.key(accountId, 'rejections', keyId), 0, REJECTIONS_KEPT - 1);
    return items.map((item) => JSON.parse(item) as Rejection);
  }

  async lastUse(accountId: number, keyIds: readonly number[]): Promise<Map<number, LastUse>> {
    if (keyIds.length === 0) return new Map();
    const values = await this.redis.hmget(this.key(accountId, 'lastuse'), ...keyIds.map(String));
    const out = new Map<number, LastUse>();
    keyIds.forEach((id, i) => {
      const value = values[i];
      if (value == null) return;
      const space = value.indexOf(' ');
      const address = value.slice(space + 1);
      out.set(id, { at: new Date(Number(value.slice(0, space))).toISOString(), address: address === '' ? null : address });
    });
    return out;
  }

  async requestLog(accountId: number, keyId: number, since: string): Promise<RequestLogEntry[]> {
    const items = await this.redis.lrange(this.key(accountId, 'log', keyId), 0, REQUEST_LOG_KEPT - 1);
    const out: RequestLogEntry[] = [];
    for (const item of items) {
      const line = logLineOfItem(item);
      if (line !== null && line.at >= since) out.push(line);
    }
    return out;
  }

  async usageBuckets(accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>> {
    const out = new Map<string, Map<string, number>>();
    if (keyIds.length === 0 || periods.length === 0) return out;
    const keys = periods.flatMap((period) => keyIds.map((keyId) => ({ key: this.key(accountId, 'use', keyId, period), group: period })));
    for (const [period, fields] of await this.sumHashes(keys)) out.set(period, fields);
    return out;
  }

  /**
   * Per day: from `stats:totals-since` on, the account's total (complete by construction); the day before
   * it, the shown keys' hashes (servers of the release before may have written that day without totals);
   * days before that, the total once filled from the keys' hashes (FILL_TOTAL, the first time such a day is
   * read: each older day is filled once, then read as one hash). The hidden keys' hashes are taken from the
   * totals. Null `stats:totals-since` (no flush of this release yet): the shown keys' hashes, every day.
   */
  async accountDays(accountId: number, shown: readonly number[], hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>> {
    const out = new Map<string, Map<string, number>>();
    if (days.length === 0) return out;
    const since = await this.totalsCompleteSince(accountId);
    const edge = since === null ? null : dayBefore(since);
    const viaKeys = (day: string) => edge === null || day === edge;
    // Groups: `+a<day>` an account total, `+u`/`+o` a shown key's buckets or outcomes, `-u`/`-o` a hidden
    // key's (taken from the totals).
    const keyHashes = (keyIds: readonly number[], day: string, sign: '+' | '-') =>
      keyIds.flatMap((keyId) => [
        { key: this.key(accountId, 'use', keyId, day), group: `${sign}u${day}` },
        { key: this.key(accountId, 'out', keyId, day), group: `${sign}o${day}` },
      ]);
    const totalsOf = (some: readonly string[]) => some.map((day) => ({ key: this.key(accountId, 'acct', day), group: `+a${day}` }));
    const withTotals = days.filter((day) => !viaKeys(day));
    const sums = await this.sumHashes([
      ...totalsOf(withTotals),
      ...withTotals.flatMap((day) => keyHashes(hidden, day, '-')),
      ...days.filter(viaKeys).flatMap((day) => keyHashes(shown, day, '+')),
    ]);
    // Days before the edge whose total was never filled: fill them now, then read them.
    const unfilled = withTotals.filter((day) => since !== null && day < since && sums.get(`+a${day}`)?.has(COMPLETE) !== true);
    if (unfilled.length > 0) {
      const all = [...shown, ...hidden];
      await Promise.all(
        unfilled.map((day) => {
          const keys = [this.key(accountId, 'acct', day), ...all.flatMap((keyId) => [this.key(accountId, 'use', keyId, day), this.key(accountId, 'out', keyId, day)])];
          const ttlMs = Math.max(1, Date.parse(`${day}T00:00:00.000Z`) + 86_400_000 + DAYS_KEPT_S * 1000 - Date.now());
          return this.redis.statsFillTotal(keys.length, ...keys, ttlMs, ...all.flatMap(() => ['', 'o:']));
        }),
      );
      for (const [group, fields] of await this.sumHashes(totalsOf(unfilled))) sums.set(group, fields);
    }
    for (const [group, fields] of sums) {
      const sign = group[0] === '-' ? -1 : 1;
      const day = group.slice(2);
      const outcome = group[1] === 'o';
      for (const [field, n] of fields) if (field !== COMPLETE) addField(out, day, outcome ? `o:${field}` : field, n, sign);
    }
    return out;
  }

  protected async disconnect(): Promise<void> {
    this.redis.disconnect();
  }
}
