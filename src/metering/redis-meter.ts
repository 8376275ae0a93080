/**
 * The meter in Redis, for many servers. One Lua script admits a request: it prunes and counts the
 * account's sliding window (a sorted set of request timestamps), records the request, and counts the
 * monthly quota and the key's day, all atomically in one round trip, so limits stay exact across any
 * number of servers. Every key expires, so nothing grows without bound.
 *
 * Redis down: commands fail at once (no offline queue) or after COMMAND_TIMEOUT_MS, the request answers
 * 503, and the client reconnects by itself in the background.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { MeterUnavailableError } from './meter.js';
import { WINDOW_MS, dayOf, monthBounds, periodOf } from './periods.js';

const COMMAND_TIMEOUT_MS = 1000;
const DAY_KEPT_S = 400 * 86_400; // per-key days are kept for a year and a bit
const QUOTA_KEPT_AFTER_RESET_S = 35 * 86_400;

// KEYS: 1 burst zset, 2 quota counter, 3 key day counter, 4 last-used hash
// ARGV: 1 now ms, 2 window ms, 3 perMinute, 4 monthly, 5 quota (0/1), 6 member, 7 quota expire-at (s),
//       8 day ttl (s), 9 key id
// Returns {allowed, remaining, oldest ms or -1, used, quotaAllowed}
const ADMIT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local perMinute = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local oldest = -1
if first[2] then oldest = tonumber(first[2]) end
if n >= perMinute then
  return {0, 0, oldest, -1, 0}
end
redis.call('ZADD', KEYS[1], now, ARGV[6])
redis.call('PEXPIRE', KEYS[1], window)
redis.call('HSET', KEYS[4], ARGV[9], ARGV[1])
if oldest == -1 then oldest = now end
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
if ARGV[5] == '1' then
  if used >= tonumber(ARGV[4]) then
    return {1, perMinute - n - 1, oldest, used, 0}
  end
  used = redis.call('INCR', KEYS[2])
  redis.call('EXPIREAT', KEYS[2], ARGV[7])
  redis.call('INCR', KEYS[3])
  redis.call('EXPIRE', KEYS[3], ARGV[8])
end
return {1, perMinute - n - 1, oldest, used, 1}
`;

// KEYS: 1 quota counter, 2 key day counter
const REFUND = `
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then redis.call('DECR', KEYS[2]) end
return 1
`;

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
/** Scripts by their SHA-1, computed once: EVALSHA on every request, EVAL only after a Redis restart. */
const SHAS = new Map<string, string>([ADMIT, REFUND].map((script) => [script, sha1(script)]));

export class RedisMeter implements Meter {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly server = randomUUID().slice(0, 8);
  private sequence = 0;

  constructor(url: string, options: { prefix?: string } = {}) {
    this.prefix = options.prefix ?? 'shelfapi:';
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: COMMAND_TIMEOUT_MS,
      retryStrategy: (attempt) => Math.min(100 * attempt, 1000),
      lazyConnect: false,
    });
    // Connection errors surface as failed commands (503); the client keeps reconnecting.
    this.redis.on('error', () => {});
  }

  /** Resolves once connected, or rejects after the timeout (start-up waits for Redis). */
  async ready(timeoutMs = 5000): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new MeterUnavailableError(new Error('Redis is not reachable'))), timeoutMs);
      this.redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private key(...parts: Array<string | number>): string {
    return this.prefix + parts.join(':');
  }

  private async script(source: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      try {
        return await this.redis.evalsha(SHAS.get(source) ?? sha1(source), keys.length, ...keys, ...args);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return await this.redis.eval(source, keys.length, ...keys, ...args);
      }
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  async admit(r: AdmitRequest): Promise<Admission> {
    const period = periodOf(r.now);
    const day = dayOf(r.now);
    const { reset } = monthBounds(r.now);
    const result = (await this.script(
      ADMIT,
      [
        this.key('burst', r.accountId),
        this.key('quota', r.accountId, period),
        this.key('keyday', r.keyId, day),
        this.key('lastused'),
      ],
      [
        r.now,
        WINDOW_MS,
        r.limits.perMinute,
        r.limits.monthly,
        r.quota ? 1 : 0,
        `${r.now}-${this.server}-${this.sequence++}`,
        Math.floor(reset / 1000) + QUOTA_KEPT_AFTER_RESET_S,
        DAY_KEPT_S,
        r.keyId,
      ],
    )) as [number, number, number, number, number];
    const [allowed, remaining, oldest, used, quotaAllowed] = result;
    if (allowed === 0) {
      const resetInMs = oldest < 0 ? WINDOW_MS : oldest + WINDOW_MS - r.now;
      return { burst: { allowed: false, remaining: 0, resetInMs }, quota: null };
    }
    return {
      burst: { allowed: true, remaining, resetInMs: oldest + WINDOW_MS - r.now },
      quota: { allowed: quotaAllowed === 1, used, period },
    };
  }

  async refund(accountId: number, keyId: number, period: string, day: string): Promise<void> {
    await this.script(REFUND, [this.key('quota', accountId, period), this.key('keyday', keyId, day)], []);
  }

  async used(accountId: number, period: string): Promise<number> {
    try {
      return Number((await this.redis.get(this.key('quota', accountId, period))) ?? 0);
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  async keyUsage(keyId: number, sinceDay: string, untilDay = dayOf(Date.now())): Promise<KeyDailyUsage[]> {
    const days: string[] = [];
    const end = Date.parse(`${untilDay}T00:00:00.000Z`);
    for (let ms = Date.parse(`${sinceDay}T00:00:00.000Z`); ms <= end; ms += 86_400_000) days.push(dayOf(ms));
    if (days.length === 0) return [];
    try {
      const counts = await this.redis.mget(...days.map((d) => this.key('keyday', keyId, d)));
      return days
        .map((day, i) => ({ day, requests: Number(counts[i] ?? 0) }))
        .filter((d) => d.requests > 0)
        .reverse();
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  async lastUsed(keyIds: number[]): Promise<Map<number, string>> {
    if (keyIds.length === 0) return new Map();
    try {
      const values = await this.redis.hmget(this.key('lastused'), ...keyIds.map(String));
      const out = new Map<number, string>();
      keyIds.forEach((id, i) => {
        const v = values[i];
        if (v != null) out.set(id, new Date(Number(v)).toISOString());
      });
      return out;
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
