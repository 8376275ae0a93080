/**
 * Moves the counts a single Redis holds under the meter's key names from before Redis Cluster support
 * (`quota:<account>:<period>`, `keyday:<key>:<day>`, one global `lastused` hash) to the names under each
 * account's hash tag that the meter reads now, so that an upgrade does not start every account's month
 * again. Burst windows are left alone: they last 60 seconds.
 *
 * Each move is one script: it adds the old count to the new one (servers of the new release may already
 * have counted under the new name) and deletes the old key, so a run that is cut off or repeated counts
 * nothing twice. Only for one Redis: the old names never existed on a cluster.
 */
import { Redis } from 'ioredis';
import { accountKey } from './redis-keys.js';
import { DAY_KEPT_S, QUOTA_KEPT_AFTER_RESET_S } from './redis-meter-script.js';
import { monthBounds } from './periods.js';

// KEYS: 1 old counter, 2 new counter; ARGV: 1 the expiry (epoch s) the meter gives such a count. Adds the old
// count to the new one, keeps the later expiry, deletes the old. A count left without an expiry gets the
// meter's: the meter sets one only when it creates a count (redis-meter.ts), so it would never expire.
const MOVE_COUNT = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
redis.call('INCRBY', KEYS[2], v)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 and redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
if redis.call('PTTL', KEYS[2]) < 0 then redis.call('EXPIREAT', KEYS[2], ARGV[1]) end
redis.call('DEL', KEYS[1])
return 1
`;

// KEYS: 1 old global hash, 2 the account's hash; ARGV: 1 key id. Keeps the later of the two last uses.
const MOVE_LAST_USE = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local now = redis.call('HGET', KEYS[2], ARGV[1])
if not now or tonumber(now) < tonumber(v) then redis.call('HSET', KEYS[2], ARGV[1], v) end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`;

/** The moves as commands of the client (EVALSHA, EVAL when the script is not loaded: see redis-client.ts). */
const SCRIPTS = {
  moveCount: { numberOfKeys: 2, lua: MOVE_COUNT },
  moveLastUse: { numberOfKeys: 2, lua: MOVE_LAST_USE },
};
type UpgradeRedis = Redis & Record<keyof typeof SCRIPTS, (...keysAndArgs: string[]) => Promise<unknown>>;

export interface UpgradeReport {
  quotas: number;
  keyDays: number;
  lastUses: number;
  /** Old keys left where they were: their API key is not in the store. */
  unknownKeys: number;
}

/** SCAN's MATCH is a glob: the prefix is taken literally. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

async function* scan(redis: Redis, pattern: string): AsyncGenerator<string> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    yield* keys;
    cursor = next;
  } while (cursor !== '0');
}

/**
 * Moves every old-named count under `prefix` in the Redis at `url`. `accountOfKey` maps API key ids to
 * their account (from the store): a key's days and last use move to its account's tag.
 */
export async function upgradeRedisKeys(url: string, prefix: string, accountOfKey: ReadonlyMap<number, number>): Promise<UpgradeReport> {
  // ioredis adds the defined commands at run time; its types do not list them.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, scripts: SCRIPTS }) as UpgradeRedis;
  redis.on('error', () => {});
  const report: UpgradeReport = { quotas: 0, keyDays: 0, lastUses: 0, unknownKeys: 0 };
  const tagged = (account: number, ...parts: Array<string | number>) => accountKey(prefix, account, ...parts);
  try {
    const base = globEscape(prefix);
    for await (const key of scan(redis, `${base}quota:*`)) {
      const m = /^quota:(\d+):(\d{4}-\d{2})$/.exec(key.slice(prefix.length));
      if (m === null) continue;
      const period = m[2] ?? '';
      const expireAt = Math.floor(monthBounds(Date.parse(`${period}-01T00:00:00Z`)).reset / 1000) + QUOTA_KEPT_AFTER_RESET_S;
      report.quotas += Number(await redis.moveCount(key, tagged(Number(m[1]), 'quota', period), String(expireAt)));
    }
    for await (const key of scan(redis, `${base}keyday:*`)) {
      const m = /^keyday:(\d+):(\d{4}-\d{2}-\d{2})$/.exec(key.slice(prefix.length));
      if (m === null) continue;
      const account = accountOfKey.get(Number(m[1]));
      if (account === undefined) {
        report.unknownKeys++;
        continue;
      }
      const day = m[2] ?? '';
      const expireAt = Math.floor(Date.parse(`${day}T00:00:00Z`) / 1000) + DAY_KEPT_S;
      report.keyDays += Number(await redis.moveCount(key, tagged(account, 'keyday', m[1] ?? '', day), String(expireAt)));
    }
    const lastUsed = `${prefix}lastused`;
    for (const field of Object.keys(await redis.hgetall(lastUsed))) {
      const account = accountOfKey.get(Number(field));
      if (account === undefined) {
        report.unknownKeys++;
        continue;
      }
      report.lastUses += Number(await redis.moveLastUse(lastUsed, tagged(account, 'lastused'), field));
    }
    return report;
  } finally {
    redis.disconnect();
  }
}
