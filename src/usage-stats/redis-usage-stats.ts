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
import { lineOfStored, storedLineOf } from './request-log-lines.js';
import { HOURS_KEPT_MS, outcomeField } from './usage-buckets.js';
import { BufferedUsageStats, StatsWriteError } from './buffered-usage-stats.js';
import { daysBetween } from '../metering/periods.js';
import {
  addField,
  outcomesByDay,
  REJECTIONS_KEPT,
  REQUEST_LOG_KEPT,
  REQUEST_LOG_MS,
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

/**
 * A request log item read back: an array (storedLineOf), or an object as written before 2026-11-28 (the
 * same fields by name); null for anything else (a value changed by hand), which is left out.
 */
function logLineOfItem(item: string): RequestLogEntry | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(item);
  } catch {
    return null;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const o = parsed as Record<string, unknown>;
    parsed = [o.at, o.method, o.path, o.status, o.error, o.outcome, o.durationMs, o.address, o.requestId];
  }
  return lineOfStored(parsed);
}

/** The day after `day` (`2026-11-24` -> `2026-11-25`), and the day before. */
const dayAfter = (day: string) => new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString().slice(0, 10);
const dayBefore = (day: string) => new Date(Date.parse(`${day}T00:00:00.000Z`) - 86_400_000).toISOString().slice(0, 10);

// KEYS: the hashes and lists written (one hash slot on a cluster). ARGV[1]: a JSON array of strings, the
// operations one after another, each naming its key by index into KEYS; ARGV[2] on: the lists' items, each an
// argument of its own (inside ARGV[1] each item, itself JSON, was encoded again, every quote escaped: a
// request log line cost the writer 2.5 µs more, half again what its first encoding cost):
//   h <key> <n> <field> <by> ...   a day's hash: HINCRBY each field; EXPIRE when a field was created (below)
//   H <key> <n> <field> <by> ...   the same for an hour's hash
//   l <key> <n> <from>             a request log: LPUSH the n items from ARGV[from] (oldest first: the newest
//                                  ends at the head), LTRIM when the list grew past what is kept (LPUSH answers
//                                  its length), EXPIRE
//   r <key> <n> <from>             the same for a key's rejections
//   u <key> <key id> <at ms> <address>  the last use "<at ms> <address>", replaced only by one at least as
//                                       recent; EXPIRE at the key's first use of a UTC day (below)
//   s <key> <value>                SET the key to the value unless it is set (an account's totals-since)
// How long each kind is kept, and how many items a list keeps, are written into the script's text, as the
// meter's constants are: an argument costs the writer a string to encode and the script one to decode, and
// these were 7 of the ~45 a request.
// A hash of counts is named by its period (a day or an hour), so it gets its expiry when it is created, as the
// meter's counts do, not at every write: a field whose count after HINCRBY is what was added was just created
// (counts only grow), and a hash is created with its first field. An item GET's statistics made 5.7 EXPIREs a
// request beside 7.5 HINCRBYs (INFO commandstats, 10,000 keys), nearly all of hashes that had their expiry.
// The last uses (a hash per account, a field per key) had their expiry set at every write: 3 of the ~10
// commands an item GET's statistics ran at 10,000 keys (INFO commandstats, 2026-11-28). It is set again when
// a key's last use moves to another UTC day (or is new): every write follows one that set it within the day
// before, so the hash is kept at least its time to live less a day after its latest write.
const STATS_WRITE = `
local OPS = cjson.decode(ARGV[1])
local i = 1
local n = #OPS
while i <= n do
  local op = OPS[i]
  local key = KEYS[tonumber(OPS[i + 1])]
  if op == 'h' or op == 'H' then
    local count = tonumber(OPS[i + 2])
    i = i + 3
    local created = false
    for _ = 1, count do
      local by = OPS[i + 1]
      if redis.call('HINCRBY', key, OPS[i], by) == tonumber(by) then created = true end
      i = i + 2
    end
    if created then redis.call('EXPIRE', key, op == 'h' and ${DAYS_KEPT_S} or ${HOURS_KEPT_S}) end
  elseif op == 'l' or op == 'r' then
    local keep = op == 'l' and ${REQUEST_LOG_KEPT} or ${REJECTIONS_KEPT}
    local count = tonumber(OPS[i + 2])
    local from = tonumber(OPS[i + 3])
    i = i + 4
    local length = redis.call('LPUSH', key, unpack(ARGV, from, from + count - 1))
    if length > keep then redis.call('LTRIM', key, 0, keep - 1) end
    redis.call('EXPIRE', key, op == 'l' and ${LOG_KEPT_S} or ${REJECTIONS_KEPT_S})
  elseif op == 'u' then
    local keyId, at, address = OPS[i + 2], OPS[i + 3], OPS[i + 4]
    i = i + 5
    local current = redis.call('HGET', key, keyId)
    local previous = current and tonumber(string.match(current, '^(%d+)'))
    if (not previous) or previous <= tonumber(at) then
      redis.call('HSET', key, keyId, at .. ' ' .. address)
      if (not previous) or math.floor(previous / 86400000) ~= math.floor(tonumber(at) / 86400000) then
        redis.call('EXPIRE', key, ${DAYS_KEPT_S})
      end
    end
  elseif op == 's' then
    redis.call('SET', key, OPS[i + 2], 'EX', ${DAYS_KEPT_S}, 'NX')
    i = i + 3
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

// KEYS: hashes of one account (one hash slot). ARGV: the group of each key (a day or an hour), in the same
// order. Returns "group NUL field NUL sum NUL ...": the hashes' fields summed per group, as one string (groups
// and fields are names shelfapi makes, never holding a NUL). As an array of three strings per sum, the client
// spent 14% of a 90-day overview's CPU building the strings one by one (docs/performance.md). The overview's
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
return table.concat(out, '\\0')
`;
/** Hashes summed per script call: one key's 90 days. */
const SUM_KEYS_PER_CALL = 100;

/** Accounts whose `totals-since` a process holds (read) or knows it set (written); past this, it starts again. */
const TOTALS_SINCE_HELD = 10_000;

// KEYS: 1 an account's day total, then its keys' hashes of that day. ARGV: 1 the total's time to live in ms,
// then per key hash its fields' prefix (`` for the usage buckets, `o:` for the outcomes). Replaces the total
// with the keys' sum and marks it complete (`_c`), unless it is already: one script, so no flush (itself one
// script per account) falls between the sum and the write, and one that comes after adds to a complete total.
const FILL_TOTAL = `
if redis.call('HEXISTS', KEYS[1], '_c') == 1 then return 0 end
local sums = {}
for i = 2, #KEYS do
  local prefix = ARGV[i]
  local fields = redis.call('HGETALL', KEYS[i])
  for j = 1, #fields, 2 do
    local field = prefix .. fields[j]
    sums[field] = (sums[field] or 0) + tonumber(fields[j + 1])
  end
end
redis.call('DEL', KEYS[1])
local args = { '_c', '1' }
for field, n in pairs(sums) do
  args[#args + 1] = field
  args[#args + 1] = string.format('%.0f', n)
end
redis.call('HSET', KEYS[1], unpack(args))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`;

/** The field that marks an account's day total filled from its keys' hashes (FILL_TOTAL). */
const COMPLETE = '_c';

const SCRIPTS = { statsWrite: { lua: STATS_WRITE }, statsSumHashes: { lua: SUM_HASHES }, statsFillTotal: { lua: FILL_TOTAL } };

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
  private key(accountId: number, ...rest: Array<string | number>): string {
    return `${this.prefix}stats:{${accountId}}:${rest.join(':')}`;
  }

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
        total = { accountId, day, fields: hashOf(accountId, this.key(accountId, 'acct', day)) };
        if (day > (newest.get(accountId) ?? '')) newest.set(accountId, day);
      }
      return total.fields;
    };
    for (const o of batch.outcomes) {
      add(hashOf(o.accountId, this.key(o.accountId, 'out', o.keyId, o.day)), o.outcome, o.requests);
      add(totalOf(o.accountId, o.day), outcomeField(o.outcome), o.requests);
    }
    let use = { keyId: -1, period: '', fields: new Map<string, number>() };
    for (const b of batch.buckets) {
      if (use.keyId !== b.keyId || use.period !== b.period) {
        const key = this.key(b.accountId, 'use', b.keyId, b.period);
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
      if (this.marked.has(accountId)) continue;
      const key = this.key(accountId, 'totals-since');
      const value = this.totalsFrom ?? dayAfter(day);
      of(accountId).emit.push((call) => call.setIfUnset(key, value));
    }
    for (const u of batch.lastUse) {
      const key = this.key(u.accountId, 'lastuse');
      of(u.accountId).emit.push((call) => call.lastUse(key, u.keyId, u.at, u.address ?? ''));
    }
    for (const r of batch.rejections) {
      const key = this.key(r.accountId, 'rejections', r.keyId);
      const items = r.items.map((item) => JSON.stringify(item));
      of(r.accountId).emit.push((call) => call.push('r', key, items));
    }
    for (const l of batch.log) {
      const key = this.key(l.accountId, 'log', l.keyId);
      // A key unused for 7 days loses its log. A line as an array (request-log-lines.ts), as SQLite stores it.
      const items = l.items.map((item) => JSON.stringify(storedLineOf(item)));
      of(l.accountId).emit.push((call) => call.push('l', key, items));
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
      for (const [key, hash] of writes.hashes) last.call.hincr(key, hash.hour, hash.fields);
      for (const emit of writes.emit) emit(last.call);
    }
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
