/**
 * Per-key statistics in Redis (when REDIS_URL or REDIS_CLUSTER_URLS is set). Every key of one account
 * carries the hash tag `{<account id>}`, so an account's statistics share one hash slot (beside its meter on
 * a Redis Cluster). A flush is one pipeline on one Redis, one per account on a cluster, all sent at once:
 * HINCRBY per key, day and outcome; the last use kept only if newer (a small script, so servers writing out
 * of order cannot move it back); LPUSH + LTRIM for the rejections and for the request log (100 lines, 7
 * days); HINCRBY per key, period (hour or day) and field for the usage buckets. Everything expires.
 * Reads of many days or keys (the day outcomes, usage in depth) sum their hashes in a script, 100 hashes a call.
 *
 * Per account on a cluster, because a pipeline runs on one master only and different accounts' slots lie
 * on different masters. When some accounts' pipelines fail (their master is away), only their records are
 * kept for the next flush; the others are written once.
 */
import { Cluster, type ChainableCommander } from 'ioredis';
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

// KEYS: 1 the account's last-use hash. ARGV: 1 key id, 2 at ms, 3 address, 4 ttl s.
// The value is "<at ms> <address>": replaced only by a use at least as recent.
const LAST_USE = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if (not current) or tonumber(string.match(current, '^(%d+)')) <= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
`;

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

const SCRIPTS = { statsLastUse: { numberOfKeys: 1, lua: LAST_USE }, statsSumHashes: { lua: SUM_HASHES } };

/** The defined command, as a pipeline sees it (queued, answered by exec). */
type StatsPipeline = ChainableCommander & {
  statsLastUse(key: string, keyId: number, at: number, address: string, ttl: number): StatsPipeline;
};

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
    // One Redis takes the whole flush in one pipeline; a cluster one per account.
    const pipelines = new Map<number, StatsPipeline>();
    const pipelineOf = (accountId: number): StatsPipeline => {
      const id = this.redis instanceof Cluster ? accountId : 0;
      let pipeline = pipelines.get(id);
      if (pipeline === undefined) {
        pipeline = this.redis.pipeline() as StatsPipeline;
        pipelines.set(id, pipeline);
      }
      return pipeline;
    };
    for (const o of batch.outcomes) {
      const key = this.key(o.accountId, 'out', o.keyId, o.day);
      pipelineOf(o.accountId).hincrby(key, o.outcome, o.requests).expire(key, DAYS_KEPT_S);
    }
    for (const u of batch.lastUse) {
      pipelineOf(u.accountId).statsLastUse(this.key(u.accountId, 'lastuse'), u.keyId, u.at, u.address ?? '', DAYS_KEPT_S);
    }
    for (const r of batch.rejections) {
      const key = this.key(r.accountId, 'rejections', r.keyId);
      // Oldest first, so the newest ends at the head of the list.
      pipelineOf(r.accountId).lpush(key, ...r.items.map((item) => JSON.stringify(item))).ltrim(key, 0, REJECTIONS_KEPT - 1).expire(key, REJECTIONS_KEPT_S);
    }
    for (const b of batch.buckets) {
      const key = this.key(b.accountId, 'use', b.keyId, b.period);
      pipelineOf(b.accountId).hincrby(key, b.field, b.requests).expire(key, isHour(b.period) ? HOURS_KEPT_S : DAYS_KEPT_S);
    }
    for (const l of batch.log) {
      const key = this.key(l.accountId, 'log', l.keyId);
      // Oldest first, so the newest ends at the head of the list; a key unused for 7 days loses its log.
      pipelineOf(l.accountId).lpush(key, ...l.items.map((item) => JSON.stringify(item))).ltrim(key, 0, REQUEST_LOG_KEPT - 1).expire(key, LOG_KEPT_S);
    }
    const ids = [...pipelines.keys()];
    const settled = await Promise.allSettled([...pipelines.values()].map(async (pipeline) => {
      const results = await pipeline.exec();
      const failed = results?.find(([error]) => error !== null);
      if (results === null || failed) throw failed?.[0] ?? new Error('Redis pipeline was not run');
    }));
    const failures = settled.flatMap((outcome, i) => (outcome.status === 'rejected' ? [{ id: ids[i] ?? 0, reason: outcome.reason as unknown }] : []));
    const [first] = failures;
    if (first === undefined) return;
    // One Redis: the whole flush failed. A cluster: only the accounts whose pipeline failed.
    if (!(this.redis instanceof Cluster)) throw first.reason;
    throw new StatsWriteError(first.reason, new Set(failures.map((f) => f.id)));
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
