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
 * PostgreSQL + Redis item GET (docs/performance.md).
 * Reads of many days or keys (the day outcomes, usage in depth) sum their hashes in a script, 100 hashes a call.
 *
 * Per account on a cluster, because a script runs on one master only and different accounts' slots lie
 * on different masters. When some accounts' pipelines fail (their master is away), only their records are
 * kept for the next flush; the others are written once.
 */
import { Cluster } from 'ioredis';
import { connectRedis, redisReady, type RedisTarget, type ScriptedRedis } from './redis-client.js';
import { HOURS_KEPT_MS } from './usage-buckets.js';
import {
  BufferedUsageStats,
  daysBetween,
  outcomesByDay,
  REJECTIONS_KEPT,
  REQUEST_LOG_KEPT,
  REQUEST_LOG_MS,
  StatsWriteError,
  type DayOutcomes,
  type LastUse,
  type Rejection,
  type RequestLogEntry,
  type StatsBatch,
} from './usage-stats.js';

const COMMAND_TIMEOUT_MS = 1000;
const DAYS_KEPT_S = 400 * 86_400;
const REJECTIONS_KEPT_S = 90 * 86_400;
const HOURS_KEPT_S = HOURS_KEPT_MS / 1000;
const LOG_KEPT_S = REQUEST_LOG_MS / 1000;
/** An hour's period (`2026-11-24T08`) is 13 characters, a day's 10. */
const isHour = (period: string) => period.length === 13;

// KEYS: the hashes and lists written (one hash slot on a cluster). ARGV: operations, one after another,
// each naming its key by index into KEYS:
//   h <key> <ttl> <n> <field> <by> ...   HINCRBY each field, then EXPIRE
//   l <key> <keep> <ttl> <n> <item> ...  LPUSH the items (oldest first: the newest ends at the head), LTRIM, EXPIRE
//   u <key> <key id> <at ms> <address> <ttl>  the last use "<at ms> <address>", replaced only by one at least
//                                            as recent, then EXPIRE
const STATS_WRITE = `
local i = 1
local n = #ARGV
while i <= n do
  local op = ARGV[i]
  local key = KEYS[tonumber(ARGV[i + 1])]
  if op == 'h' then
    local ttl = ARGV[i + 2]
    local count = tonumber(ARGV[i + 3])
    i = i + 4
    for _ = 1, count do
      redis.call('HINCRBY', key, ARGV[i], ARGV[i + 1])
      i = i + 2
    end
    redis.call('EXPIRE', key, ttl)
  elseif op == 'l' then
    local keep = tonumber(ARGV[i + 2])
    local ttl = ARGV[i + 3]
    local count = tonumber(ARGV[i + 4])
    i = i + 5
    redis.call('LPUSH', key, unpack(ARGV, i, i + count - 1))
    i = i + count
    redis.call('LTRIM', key, 0, keep - 1)
    redis.call('EXPIRE', key, ttl)
  elseif op == 'u' then
    local keyId, at, address, ttl = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    i = i + 6
    local current = redis.call('HGET', key, keyId)
    if (not current) or tonumber(string.match(current, '^(%d+)')) <= tonumber(at) then
      redis.call('HSET', key, keyId, at .. ' ' .. address)
    end
    redis.call('EXPIRE', key, ttl)
  else
    return redis.error_reply('STATS_WRITE: unknown operation ' .. tostring(op))
  end
end
return 1
`;

/**
 * Commands in one call of STATS_WRITE on one Redis: Redis serves no one else while a script runs, so a
 * busy flush (thousands of fields) goes as several calls, each about as long as a pipeline's batch.
 */
const COMMANDS_PER_CALL = 1000;

/** One call of STATS_WRITE being built: its keys (each once) and its operations. */
class StatsCall {
  readonly keys: string[] = [];
  readonly args: Array<string | number> = [];
  /** Redis commands the call will run: what COMMANDS_PER_CALL bounds. */
  commands = 0;
  private readonly index = new Map<string, number>();

  private keyOf(key: string): number {
    let i = this.index.get(key);
    if (i === undefined) {
      this.keys.push(key);
      i = this.keys.length;
      this.index.set(key, i);
    }
    return i;
  }

  hincr(key: string, ttl: number, fields: ReadonlyMap<string, number>): void {
    this.args.push('h', this.keyOf(key), ttl, fields.size);
    for (const [field, by] of fields) this.args.push(field, by);
    this.commands += fields.size + 1;
  }

  push(key: string, keep: number, ttl: number, items: readonly string[]): void {
    this.args.push('l', this.keyOf(key), keep, ttl, items.length, ...items);
    this.commands += 3;
  }

  lastUse(key: string, keyId: number, at: number, address: string, ttl: number): void {
    this.args.push('u', this.keyOf(key), keyId, at, address, ttl);
    this.commands += 3;
  }
}

/** One account's writes of a flush, before they are put into calls: hashes grouped, so each expires once. */
interface AccountWrites {
  hashes: Map<string, { ttl: number; fields: Map<string, number> }>;
  emit: Array<(call: StatsCall) => void>;
}

// KEYS: hashes of one account (one hash slot). ARGV: the group of each key (a day or an hour), in the same
// order. Returns [group, field, sum, ...]: the hashes' fields summed per group, in one reply. The overview's
// 90 days of 20 keys were 1,800 HGETALLs (and 1,820 more for the outcomes), each read and parsed by the
// client (~15 µs of its CPU each). A call takes at most SUM_KEYS_PER_CALL keys, so that Redis, which runs a
// script without serving anyone else, is held about as long as by a pipeline's batch of commands.
const SUM_HASHES = `
local sums = {}
for i, key in ipairs(KEYS) do
  local group = ARGV[i]
  local into = sums[group]
  if into == nil then
    into = {}
    sums[group] = into
  end
  local fields = redis.call('HGETALL', key)
  for j = 1, #fields, 2 do
    local field = fields[j]
    into[field] = (into[field] or 0) + tonumber(fields[j + 1])
  end
end
local out = {}
for group, fields in pairs(sums) do
  for field, n in pairs(fields) do
    out[#out + 1] = group
    out[#out + 1] = field
    out[#out + 1] = string.format('%.0f', n)
  end
end
return out
`;
/** Hashes summed per script call: one key's 90 days. */
const SUM_KEYS_PER_CALL = 100;

const SCRIPTS = { statsWrite: { lua: STATS_WRITE }, statsSumHashes: { lua: SUM_HASHES } };

export class RedisUsageStats extends BufferedUsageStats {
  private readonly redis: ScriptedRedis<keyof typeof SCRIPTS>;
  private readonly prefix: string;

  constructor(target: RedisTarget, options: { prefix?: string } = {}) {
    super();
    this.prefix = options.prefix ?? 'shelfapi:';
    // Connection errors surface as failed flushes (records kept) or failed reads; the client reconnects.
    this.redis = connectRedis(target, { scripts: SCRIPTS, connectTimeoutMs: COMMAND_TIMEOUT_MS, commandTimeoutMs: COMMAND_TIMEOUT_MS });
  }

  ready(timeoutMs = 5000): Promise<void> {
    return redisReady(this.redis, timeoutMs);
  }

  /** `<prefix>stats:{<account>}:<rest>`: the braces make Redis Cluster hash only the account id. */
  private key(accountId: number, ...rest: Array<string | number>): string {
    return `${this.prefix}stats:{${accountId}}:${rest.join(':')}`;
  }

  protected async write(batch: StatsBatch): Promise<void> {
    const accounts = new Map<number, AccountWrites>();
    const of = (accountId: number): AccountWrites => {
      let writes = accounts.get(accountId);
      if (writes === undefined) {
        writes = { hashes: new Map(), emit: [] };
        accounts.set(accountId, writes);
      }
      return writes;
    };
    const hincr = (accountId: number, key: string, ttl: number, field: string, by: number) => {
      const hashes = of(accountId).hashes;
      let hash = hashes.get(key);
      if (hash === undefined) {
        hash = { ttl, fields: new Map() };
        hashes.set(key, hash);
      }
      hash.fields.set(field, (hash.fields.get(field) ?? 0) + by);
    };
    for (const o of batch.outcomes) hincr(o.accountId, this.key(o.accountId, 'out', o.keyId, o.day), DAYS_KEPT_S, o.outcome, o.requests);
    for (const b of batch.buckets) {
      hincr(b.accountId, this.key(b.accountId, 'use', b.keyId, b.period), isHour(b.period) ? HOURS_KEPT_S : DAYS_KEPT_S, b.field, b.requests);
    }
    for (const u of batch.lastUse) {
      const key = this.key(u.accountId, 'lastuse');
      of(u.accountId).emit.push((call) => call.lastUse(key, u.keyId, u.at, u.address ?? '', DAYS_KEPT_S));
    }
    for (const r of batch.rejections) {
      const key = this.key(r.accountId, 'rejections', r.keyId);
      const items = r.items.map((item) => JSON.stringify(item));
      of(r.accountId).emit.push((call) => call.push(key, REJECTIONS_KEPT, REJECTIONS_KEPT_S, items));
    }
    for (const l of batch.log) {
      const key = this.key(l.accountId, 'log', l.keyId);
      // A key unused for 7 days loses its log.
      const items = l.items.map((item) => JSON.stringify(item));
      of(l.accountId).emit.push((call) => call.push(key, REQUEST_LOG_KEPT, LOG_KEPT_S, items));
    }

    // One Redis: the accounts share calls of up to COMMANDS_PER_CALL. A cluster: a call per account (its slot).
    const cluster = this.redis instanceof Cluster;
    const calls: Array<{ call: StatsCall; accounts: number[] }> = [];
    for (const [accountId, writes] of accounts) {
      let last = calls.at(-1);
      if (last === undefined || cluster || last.call.commands >= COMMANDS_PER_CALL) {
        last = { call: new StatsCall(), accounts: [] };
        calls.push(last);
      }
      last.accounts.push(accountId);
      for (const [key, hash] of writes.hashes) last.call.hincr(key, hash.ttl, hash.fields);
      for (const emit of writes.emit) emit(last.call);
    }
    const settled = await Promise.allSettled(calls.map(({ call }) => this.redis.statsWrite(call.keys.length, ...call.keys, ...call.args)));
    const failed = new Set<number>();
    let first: unknown;
    settled.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') return;
      first ??= outcome.reason;
      for (const accountId of calls[i]!.accounts) failed.add(accountId);
    });
    if (failed.size === 0) return;
    // Only the accounts whose call failed are kept for the next flush: the others' calls ran.
    if (failed.size === accounts.size) throw first;
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
    for (const reply of (await Promise.all(calls)) as string[][]) {
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
    return items.map((item) => JSON.parse(item) as RequestLogEntry).filter((entry) => entry.at >= since);
  }

  async usageBuckets(accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>> {
    const out = new Map<string, Map<string, number>>();
    if (keyIds.length === 0 || periods.length === 0) return out;
    const keys = periods.flatMap((period) => keyIds.map((keyId) => ({ key: this.key(accountId, 'use', keyId, period), group: period })));
    for (const [period, fields] of await this.sumHashes(keys)) out.set(period, fields);
    return out;
  }

  protected async disconnect(): Promise<void> {
    this.redis.disconnect();
  }
}
