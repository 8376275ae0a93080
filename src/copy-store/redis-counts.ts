/**
 * The counts copied into Redis, for servers that meter there (REDIS_URL or REDIS_CLUSTER_URLS): the keys the
 * Redis meter reads (src/metering/redis-meter.ts: each account's month count, its keys' day counts and last
 * uses, its burst window) and those the owners' statistics read (written by RedisUsageStats itself, so the
 * names cannot drift). Read from the target's tables inside the copy's transaction, once everything is
 * merged there, so PostgreSQL and Redis hold the same numbers.
 *
 * Redis is not part of the PostgreSQL transaction. So its key prefix must hold nothing when the copy starts
 * (refused otherwise), and when the copy fails after writing some of it, every key under the prefix is
 * deleted again: no server may use that prefix while the copy runs (docs/operations.md, "Moving from SQLite").
 */
import { Cluster, type Redis } from 'ioredis';
import { sql, type Kysely } from 'kysely';
import { InputError } from '../errors/input-error.js';
import { WINDOW_MS, dayOf, monthBounds } from '../metering/periods.js';
import { connectRedis, redisReady, type RedisTarget } from '../metering/redis-client.js';
import { accountKey } from '../metering/redis-keys.js';
import { DAY_KEPT_S, QUOTA_KEPT_AFTER_RESET_S } from '../metering/redis-meter-script.js';
import { globEscape } from '../metering/redis-upgrade-keys.js';
import { RedisUsageStats } from '../usage-stats/redis-usage-stats.js';
import { linesOfChunk } from '../usage-stats/request-log-chunks.js';
import { dayOfHourRow, outcomeDayOfHourRow } from '../usage-stats/usage-buckets.js';
import { isOutcome, type StatsBatch } from '../usage-stats/usage-stats.js';
import type { Database } from '../store/schema.js';
import { shownUrl } from './shown-url.js';

const DAY_S = 86_400;
/** Commands in flight at once. */
const CHUNK = 1000;

export interface RedisCopy {
  monthCounts: number;
  dayCounts: number;
  lastUses: number;
  burstTimes: number;
  /** Keys whose owners' statistics (day outcomes, last use, rejections, request log, usage buckets) were written. */
  statsKeys: number;
}

type Client = Redis | Cluster;

function redisShown(target: RedisTarget): string {
  return typeof target === 'string' ? shownUrl(target) : target.cluster.map(shownUrl).join(',');
}

export interface RedisSession {
  readonly client: Client;
  readonly target: RedisTarget;
  readonly prefix: string;
  close(): void;
}

/** Connects to Redis and checks that nothing is under the prefix yet; an InputError otherwise. */
export async function openEmptyRedis(target: RedisTarget, prefix: string): Promise<RedisSession> {
  const client = connectRedis<never>(target, { scripts: {}, connectTimeoutMs: 5000, commandTimeoutMs: 30_000 });
  const close = () => client.disconnect();
  try {
    await redisReady(client, 5000);
  } catch {
    close();
    throw new InputError(`cannot reach Redis at ${redisShown(target)}; nothing was changed`);
  }
  try {
    const found = await firstKey(client, prefix);
    if (found !== null) {
      throw new InputError(
        `Redis at ${redisShown(target)} already holds keys under the prefix ${JSON.stringify(prefix)} (${found}): copy-store only copies counts into an empty prefix ` +
          '(if the SQLite servers metered in this Redis already, its counts are there: copy with --no-redis); nothing was changed',
      );
    }
  } catch (error) {
    close();
    throw error;
  }
  return { client, target, prefix, close };
}

function masters(client: Client): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

async function* keysUnder(client: Client, prefix: string): AsyncGenerator<{ node: Redis; key: string }> {
  for (const node of masters(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${globEscape(prefix)}*`, 'COUNT', 1000);
      for (const key of keys) yield { node, key };
      cursor = next;
    } while (cursor !== '0');
  }
}

async function firstKey(client: Client, prefix: string): Promise<string | null> {
  for await (const { key } of keysUnder(client, prefix)) return key;
  return null;
}

/** Deletes every key under the prefix: what a failed copy wrote (the prefix was empty when it began). */
export async function clearPrefix(session: RedisSession): Promise<void> {
  for await (const { node, key } of keysUnder(session.client, session.prefix)) await node.del(key);
}

async function inChunks<T>(items: readonly T[], send: (item: T) => Promise<unknown>): Promise<void> {
  // Commands sent without waiting for each reply share the connection's pipeline; on a cluster each goes to its slot's master.
  for (let i = 0; i < items.length; i += CHUNK) await Promise.all(items.slice(i, i + CHUNK).map(send));
}

/**
 * The count and its expiry in one command, so that no count is ever left without one (the meter sets a
 * count's expiry only when it creates it: redis-meter.ts). SET's EXAT needs Redis 6.2 and the meter runs on
 * Redis 5, so the expiry goes as seconds from now.
 */
async function setUntil(client: Client, key: string, value: number, expireAtS: number, nowS: number): Promise<void> {
  await client.set(key, value, 'EX', Math.max(1, expireAtS - nowS));
}

/** The meter's counts and the owners' statistics, from the target's tables into Redis. */
export async function copyCountsToRedis(session: RedisSession, trx: Kysely<Database>, now: number): Promise<RedisCopy> {
  const { client, prefix } = session;
  const key = (accountId: number, ...parts: Array<string | number>) => accountKey(prefix, accountId, ...parts);
  const nowS = Math.floor(now / 1000);

  const months = (await trx.selectFrom('quota_usage').select(['account_id', 'period', 'used']).where('used', '>', 0).execute())
    .map((m) => ({ ...m, expireAt: Math.floor(monthBounds(Date.parse(`${m.period}-01T00:00:00.000Z`)).reset / 1000) + QUOTA_KEPT_AFTER_RESET_S }))
    .filter((m) => Number.isFinite(m.expireAt) && m.expireAt > nowS);
  await inChunks(months, (m) => setUntil(client, key(m.account_id, 'quota', m.period), m.used, m.expireAt, nowS));

  const sinceDay = dayOf(now - DAY_KEPT_S * 1000);
  const days = await trx
    .selectFrom('key_usage_daily as d')
    .innerJoin('api_keys as k', 'k.id', 'd.key_id')
    .select(['k.account_id', 'd.key_id', 'd.day', 'd.requests'])
    .where('d.day', '>=', sinceDay)
    .where('d.requests', '>', 0)
    .execute();
  await inChunks(days, (d) =>
    setUntil(client, key(d.account_id, 'keyday', d.key_id, d.day), d.requests, Math.floor(Date.parse(`${d.day}T00:00:00.000Z`) / 1000) + DAY_S + DAY_KEPT_S, nowS),
  );

  const uses = await trx.selectFrom('api_keys').select(['id', 'account_id', 'last_used_at']).where('last_used_at', 'is not', null).execute();
  await inChunks(uses, (u) => client.hset(key(u.account_id, 'lastused'), String(u.id), String(Date.parse(u.last_used_at ?? ''))));

  const events = await trx.selectFrom('burst_events').select(['account_id', 'at_ms']).orderBy('account_id').orderBy('at_ms').execute();
  const windows = new Map<number, number[]>();
  for (const e of events) {
    const times = windows.get(e.account_id) ?? [];
    times.push(Number(e.at_ms));
    windows.set(e.account_id, times);
  }
  await inChunks([...windows], async ([accountId, times]) => {
    const burst = key(accountId, 'burst');
    await client.zadd(burst, ...times.flatMap((at, i) => [at, `${at}-copy-${i}`]));
    // The meter lets the window's key lapse a minute after its latest admission; so does the copy.
    await client.pexpire(burst, Math.max(1, Math.max(...times) + WINDOW_MS - now));
  });

  const statsKeys = await copyStats(session, trx, sinceDay);
  return { monthCounts: months.length, dayCounts: days.length, lastUses: uses.length, burstTimes: events.length, statsKeys };
}

/** RedisUsageStats' own write, so that the statistics land under exactly the names it reads. */
class StatsWriter extends RedisUsageStats {
  put(batch: StatsBatch): Promise<void> {
    return this.write(batch);
  }
}

async function copyStats(session: RedisSession, trx: Kysely<Database>, sinceDay: string): Promise<number> {
  const outcomes = await trx
    .selectFrom('key_outcomes_daily as o')
    .innerJoin('api_keys as k', 'k.id', 'o.key_id')
    .select(['k.account_id', 'o.key_id', 'o.day', 'o.outcome', 'o.requests'])
    .where('o.day', '>=', sinceDay)
    .execute();
  const lastUse = await trx
    .selectFrom('key_last_use as u')
    .innerJoin('api_keys as k', 'k.id', 'u.key_id')
    .select(['k.account_id', 'u.key_id', 'u.at', 'u.address'])
    .execute();
  const rejected = await trx
    .selectFrom('key_rejections as r')
    .innerJoin('api_keys as k', 'k.id', 'r.key_id')
    .select(['k.account_id', 'r.key_id', 'r.at', 'r.method', 'r.path', 'r.status', 'r.error', 'r.message', 'r.request_id'])
    .orderBy('r.key_id')
    .orderBy(sql`r.at`)
    .orderBy('r.id')
    .execute();
  const rejections = new Map<number, StatsBatch['rejections'][number]>();
  for (const r of rejected) {
    const entry = rejections.get(r.key_id) ?? { accountId: r.account_id, keyId: r.key_id, items: [] };
    entry.items.push({ at: r.at, method: r.method, path: r.path, status: r.status, error: r.error, message: r.message, requestId: r.request_id });
    rejections.set(r.key_id, entry);
  }
  // Every chunk of every key, oldest first: the Redis store keeps each key's newest lines as it writes them.
  const logged = await trx
    .selectFrom('key_request_log_chunks as l')
    .innerJoin('api_keys as k', 'k.id', 'l.key_id')
    .select(['k.account_id', 'l.key_id', 'l.body'])
    .orderBy('l.key_id')
    .orderBy('l.id')
    .execute();
  const log = new Map<number, StatsBatch['log'][number]>();
  for (const l of logged) {
    const entry = log.get(l.key_id) ?? { accountId: l.account_id, keyId: l.key_id, items: [] };
    entry.items.push(...linesOfChunk(l.body));
    log.set(l.key_id, entry);
  }
  for (const entry of log.values()) entry.items.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const buckets = await trx
    .selectFrom('key_usage_buckets as b')
    .innerJoin('api_keys as k', 'k.id', 'b.key_id')
    .select(['k.account_id', 'b.key_id', 'b.period', 'b.field', 'b.requests'])
    .where('b.period', '>=', sinceDay)
    .execute();
  // A day's outcomes are its row plus its `o:` hours not yet purged (usage-buckets.ts); Redis keeps them by day.
  const outcomeHours = buckets.flatMap((b) => {
    const of = outcomeDayOfHourRow(b.period, b.field);
    return of === null ? [] : [{ account_id: b.account_id, key_id: b.key_id, day: of.day, outcome: of.outcome, requests: Number(b.requests) }];
  });
  const batch: StatsBatch = {
    outcomes: [...outcomes, ...outcomeHours].flatMap((o) =>
      isOutcome(o.outcome) ? [{ accountId: o.account_id, keyId: o.key_id, day: o.day, outcome: o.outcome, requests: Number(o.requests) }] : [],
    ),
    lastUse: lastUse.map((u) => ({ accountId: u.account_id, keyId: u.key_id, at: Date.parse(u.at), address: u.address })),
    rejections: [...rejections.values()],
    log: [...log.values()],
    // The database's days hold the hours it purged; Redis's the hours too (usage-buckets.ts): each kept hour goes to both.
    buckets: buckets.flatMap((b) => {
      const row = { accountId: b.account_id, keyId: b.key_id, period: b.period, field: b.field, requests: Number(b.requests) };
      const day = dayOfHourRow(b.period, b.field);
      return day === null ? [row] : [row, { ...row, period: day }];
    }),
  };
  const keys = new Set([...outcomes.map((o) => o.key_id), ...lastUse.map((u) => u.key_id), ...rejections.keys(), ...log.keys(), ...buckets.map((b) => b.key_id)]);
  if (keys.size === 0) return 0;
  // The prefix was empty: every day's account totals are written whole, from the first day copied on.
  const writer = new StatsWriter(session.target, { prefix: session.prefix, totalsCompleteFrom: sinceDay });
  try {
    await writer.ready();
    for (const part of batches(batch)) await writer.put(part);
  } finally {
    await writer.close();
  }
  return keys.size;
}

/** The batch in parts of at most CHUNK entries of each kind: one pipeline each, well within a command's timeout. */
function* batches(batch: StatsBatch): Generator<StatsBatch> {
  const longest = Math.max(batch.outcomes.length, batch.lastUse.length, batch.rejections.length, batch.log.length, batch.buckets.length);
  for (let i = 0; i < longest; i += CHUNK) {
    yield {
      outcomes: batch.outcomes.slice(i, i + CHUNK),
      lastUse: batch.lastUse.slice(i, i + CHUNK),
      rejections: batch.rejections.slice(i, i + CHUNK),
      log: batch.log.slice(i, i + CHUNK),
      buckets: batch.buckets.slice(i, i + CHUNK),
    };
  }
}
