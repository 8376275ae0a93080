/**
 * The meter in Redis, for many servers. One Lua script admits a request: it prunes and counts the
 * account's sliding window (a sorted set of request timestamps), records the request, and counts the
 * monthly quota and the key's day, all atomically in one round trip, so limits stay exact across any
 * number of servers. Every key expires, so nothing grows without bound.
 *
 * On one Redis, the admissions asked for during one turn of the event loop go together: one call of the
 * script runs them one after another, in the order asked, each exactly as it would run alone, and each
 * caller gets its own answer. Redis's cost of a call, and the client's of a command, are most of what an
 * admission costs (a busy server's turn holds several). A call holds at most ADMISSIONS_PER_CALL admissions:
 * a full one leaves at once (redis-client.ts, writeTurnNow), the turn's last in the turn's write (atTurnsWrite).
 *
 * Redis Cluster: every key one admission touches (the window, the month, the key's day, the last uses) is
 * named under the account's hash tag, `{a:<accountId>}`, so all of them live in one slot and the script runs
 * on one master; accounts spread over the masters. Nothing is global: a script may only touch keys of one
 * slot, and a global key would put every request on one node. So on a cluster each admission is a call of
 * its own (the same script, given one admission).
 *
 * Redis down: commands fail at once (no offline queue) or at the request's deadline, the request answers
 * 503, and the client reconnects by itself in the background.
 *
 * A late admission counts nothing. A server that gives up on Redis cannot take back a script already on the
 * socket: a Redis that stalled (SIGSTOP, a long fork, a saturated host) runs it when it resumes, after the
 * client was answered 503. So the script carries a deadline and compares it with Redis's own clock (TIME):
 * past it, it writes nothing. The deadline is the server's give-up instant less REPLY_MARGIN_MS, the time
 * a reply has to come back. Should a counted reply still arrive after the server gave up (a slow network,
 * clocks apart by more than the margin), the server undoes it.
 *
 * A lost reply counts nothing either. Redis may run a script and write it to its append-only file, then die
 * (or the connection break) before the reply reaches the server, which answers 503. So each admission
 * records what it charged (the burst only, or the quota and the key's day too) under its unique member, in
 * a hash of the account's minute kept ADMISSIONS_KEPT_S; when the reply is lost with the connection, the
 * server sends the undo until Redis answers again. The undo reads that record and deletes it: it takes back
 * exactly what was charged, once, and nothing when the script never ran. A late reply is undone the same way.
 * All of this holds for each admission of a call apart: each has its own deadline and member, a call whose
 * reply is lost has each of its admissions undone, and a late reply undoes those of its admissions that counted.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, ReplyError, type Redis } from 'ioredis';
import type { Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { MeterUnavailableError, settleMeterBy } from './meter.js';
import { atTurnsWrite, connectRedis, redisReady, writeTurnNow, type RedisTarget, type ScriptedRedis } from './redis-client.js';
import { accountKey, accountTag } from './redis-keys.js';
import {
  ACCESS_MARK_KEPT_S,
  ACCESS_SCRIPTS,
  ACCESS_VERSION_KEPT_S,
  ADMIT_ACCESS_CHECK,
  DELETED_VERSION,
  accessKeys,
  accessKeysOf,
} from './redis-access-versions.js';
import type { AccessFence } from './access-change.js';
import { WINDOW_MS, dayOf, daysBetween, monthBounds, periodOf } from './periods.js';
import { settleBy } from '../deadline.js';

/** How long an admission without a request deadline (the CLI, tests), or a readiness ping, waits for Redis. */
const COMMAND_TIMEOUT_MS = 1000;
/** The client's own limit for every command: a backstop past any request deadline (see settleBy). */
const CLIENT_TIMEOUT_MS = 3000;
const REPLY_MARGIN_MS = 200;
/** Per-key days are kept for a year and a bit; a month's count 35 days past its end (copy-store writes the same). */
export const DAY_KEPT_S = 400 * 86_400;
export const QUOTA_KEPT_AFTER_RESET_S = 35 * 86_400;
/**
 * How long Redis keeps each admission's record of what it charged, so that one whose reply was lost can be
 * taken back: for this long after Redis answers again (a restart, a failover), no longer. The records of
 * one account and minute share a hash, which expires as a whole.
 */
const ADMISSIONS_KEPT_S = 300;
const ADMISSIONS_BUCKET_MS = 60_000;
/** A give-back's token is kept this long: past its last retry (give-back.ts retries for 10 minutes). */
const REFUND_TOKEN_KEPT_S = 15 * 60;
/** The pause between attempts to take back an admission whose reply was lost, while Redis is away. */
const UNDO_RETRY_MS = 500;

/**
 * The most admissions one call of the script carries. A call that is full leaves at once, mid-turn; the
 * turn's last admissions leave at its end. Sent only at the end of the turn, a busy server's admissions went
 * in lockstep: a turn read ~32 requests and sent their one call, the request thread then waited for Redis
 * with nothing to do, and Redis had waited for it (the request thread idle a third of the time, the 2 cores
 * 72% busy, PostgreSQL + Redis item GET at 50 connections). Sent 16 at a time, Redis runs the first call while
 * the turn reads the next requests: 8-25% more requests a second in turns with it, the cores 81% busy
 * (6 and 10 a call gave the same; docs/performance.md, 2026-11-28).
 */
export const ADMISSIONS_PER_CALL = 16;
/** How many keys, arguments and reply values each admission of a call has in the script (ADMIT). */
const ADMISSION_KEYS = 7;
const ADMISSION_ARGS = 10;
const ADMISSION_REPLY = 5;

// One or more admissions, one after another, in the order given: the i-th (from 0) has the 7 KEYS after
// k = 7i and the 10 ARGV after a = 10i, and its 5 values in the reply after 5i. On a Redis Cluster a call
// carries one admission: the keys of one call must share a slot.
// KEYS (one hash slot): 1 burst zset, 2 quota counter, 3 key day counter, 4 the account's last-used hash,
//       5 the account's admissions of this minute (member -> what was charged), 6 and 7 the account's
//       access version and its changes' marks (redis-access-versions.ts)
// ARGV: 1 now ms, 2 perMinute, 3 monthly, 4 quota (0/1), 5 member, 6 quota expire-at (s), 7 key id,
//       8 deadline (epoch ms by Redis's clock), 9 the access version the server holds ('' for no check),
//       10 a version to raise it to ('' for none)
// The constants (the window, how long days and admissions are kept) are written into the script's text:
// every argument costs the server's client a conversion and Redis a string, on every request.
// Returns, for each admission, {allowed, remaining, oldest ms or -1, used, quotaAllowed}; {-1, 0, 0, 0, 0}
// past its deadline, {-2, 0, 0, 0, 0} when the held access version is not the account's (nothing written), or
// {-3, the error, 0, 0, 0} when one of its commands failed (a key of the wrong type): that admission fails as
// it would have alone (what it wrote before the failure stays, as it did), and the others of the call stand.
// TIME is read once a call: each admission compares its own deadline with it. A call of ADMISSIONS_PER_CALL
// runs well within REPLY_MARGIN_MS of it.
// A month's and a day's count get their expiry when they are created (INCR answers 1): a count that exists
// already has one (the upgrade and copy-store give every count they write one), so setting it again on every
// request would cost two calls for nothing. The month's count is taken first and put back when it went past the
// quota: one call for a counted request, the common case, where reading it first cost two.
// TIME before writes needs effects replication: always on since Redis 7, the default since 5.
const ADMIT = `
local time = redis.call('TIME')
local clock = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local function admit(k, a)
  if clock > tonumber(ARGV[a + 8]) then
    return -1, 0, 0, 0, 0
  end
${ADMIT_ACCESS_CHECK}
  local burst = KEYS[k + 1]
  local member = ARGV[a + 5]
  local now = tonumber(ARGV[a + 1])
  local perMinute = tonumber(ARGV[a + 2])
  redis.call('ZREMRANGEBYSCORE', burst, '-inf', now - ${WINDOW_MS})
  local n = redis.call('ZCARD', burst)
  local oldest = -1
  if n > 0 then
    local first = redis.call('ZRANGE', burst, 0, 0, 'WITHSCORES')
    oldest = tonumber(first[2])
  end
  if n >= perMinute then
    return 0, 0, oldest, -1, 0
  end
  redis.call('ZADD', burst, now, member)
  redis.call('PEXPIRE', burst, ${WINDOW_MS})
  redis.call('HSET', KEYS[k + 4], ARGV[a + 7], ARGV[a + 1])
  if oldest == -1 then oldest = now end
  local used
  local counted = 0
  local quota = ARGV[a + 4] == '1'
  if quota then
    local month = KEYS[k + 2]
    used = redis.call('INCR', month)
    if used == 1 then redis.call('EXPIREAT', month, ARGV[a + 6]) end
    if used > tonumber(ARGV[a + 3]) then
      used = redis.call('DECR', month)
    else
      if redis.call('INCR', KEYS[k + 3]) == 1 then redis.call('EXPIRE', KEYS[k + 3], ${DAY_KEPT_S}) end
      counted = 1
    end
  else
    used = tonumber(redis.call('GET', KEYS[k + 2]) or '0')
  end
  redis.call('HSET', KEYS[k + 5], member, counted)
  redis.call('EXPIRE', KEYS[k + 5], ${ADMISSIONS_KEPT_S})
  if quota and counted == 0 then
    return 1, perMinute - n - 1, oldest, used, 0
  end
  return 1, perMinute - n - 1, oldest, used, 1
end
local replies = {}
for i = 0, #KEYS / ${ADMISSION_KEYS} - 1 do
  local ok, allowed, remaining, oldest, used, quotaAllowed = pcall(admit, i * ${ADMISSION_KEYS}, i * ${ADMISSION_ARGS})
  if not ok then
    -- A command's error comes as a string (Redis 7.0) or as a table {err = ...}.
    allowed, remaining, oldest, used, quotaAllowed = -3, type(allowed) == 'table' and tostring(allowed.err) or tostring(allowed), 0, 0, 0
  end
  local at = i * ${ADMISSION_REPLY}
  replies[at + 1] = allowed
  replies[at + 2] = remaining
  replies[at + 3] = oldest
  replies[at + 4] = used
  replies[at + 5] = quotaAllowed
end
return replies
`;

// KEYS: 1 quota counter, 2 key day counter, 3 the give-back's token; ARGV: 1 deadline (epoch ms by Redis's
// clock), as for ADMIT, 2 whether a token is given (0/1), 3 how long it is kept (s). A token already there is
// a give-back done before (its reply lost): done, nothing more is taken.
const REFUND = `
local time = redis.call('TIME')
if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > tonumber(ARGV[1]) then
  return 0
end
if ARGV[2] == '1' and not redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[3]) then return 1 end
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then redis.call('DECR', KEYS[2]) end
return 1
`;

// Takes back one admission the server does not answer for: its reply came after the server gave up, or
// never came. KEYS: as ADMIT's 1, 2, 3 and 5; ARGV: 1 the admission's member. The admission's own record
// says what it charged, if it ran at all; deleting that record makes the undo happen once, however many
// times it is sent. Returns 1 when there was something to undo.
const UNDO = `
local charged = redis.call('HGET', KEYS[4], ARGV[1])
if not charged then return 0 end
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if charged == '1' then
  if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then redis.call('DECR', KEYS[2]) end
  if tonumber(redis.call('GET', KEYS[3]) or '0') > 0 then redis.call('DECR', KEYS[3]) end
end
return 1
`;

const NO_CHECK: AccessCheck = Object.freeze({ held: null, known: null });

/** The scripts, as commands of the client (redis-client.ts). */
const SCRIPTS = {
  ...ACCESS_SCRIPTS,
  // Its number of keys is given at each call: 7 for each admission it carries.
  meterAdmit: { lua: ADMIT },
  meterRefund: { numberOfKeys: 3, lua: REFUND },
  meterUndo: { numberOfKeys: 4, lua: UNDO },
};

export { accountKey };

/**
 * Every key one admission touches, in the order of the script's KEYS: the burst window, the month's
 * count, the key's day and the account's last uses. A refund and an undo touch some of the same.
 */
export function admissionKeys(prefix: string, r: Pick<AdmitRequest, 'accountId' | 'keyId' | 'now'>): string[] {
  const tag = accountTag(prefix, r.accountId);
  const [access, changing] = accessKeysOf(tag);
  return [
    `${tag}burst`,
    `${tag}quota:${periodOf(r.now)}`,
    `${tag}keyday:${r.keyId}:${dayOf(r.now)}`,
    `${tag}lastused`,
    `${tag}admitted:${Math.floor(r.now / ADMISSIONS_BUCKET_MS)}`,
    access,
    changing,
  ];
}

/**
 * What an admission checks of the account's access (redis-access-versions.ts): `held`, the access version of
 * the principal the server holds (null: the server read PostgreSQL for this request, no check), and `known`,
 * a version just read from PostgreSQL, written to Redis unless a higher one is there (null: none read).
 */
export interface AccessCheck {
  held: number | null;
  known: number | null;
}

/** The admission was not made: the held principal's access version is not the account's in Redis. */
export const STALE = 'stale' as const;

/** The meter of PostgreSQL + Redis servers that hold principals (api-pipeline.ts): admits with the access check. */
export interface AccessCheckedMeter {
  admitChecked(request: AdmitRequest, access: AccessCheck): Promise<Admission | typeof STALE>;
  /** Writes an account's version (never lower), as a NOTIFY from PostgreSQL said it (version-listener.ts). */
  raiseAccessVersion(accountId: number, version: number | 'deleted'): Promise<void>;
}

/**
 * False when the command surely did not run: Redis answered with an error, or the client never sent it
 * (not connected, and no offline queue). Otherwise (the connection closed or timed out with the command on
 * it) Redis may have run it, and its reply is lost. The message is ioredis 5's (pinned in package.json); were
 * it to change, every failure would be taken for a lost reply, which costs an undo that finds nothing.
 */
function mayHaveRun(error: unknown): boolean {
  if (error instanceof ReplyError) return false;
  return !(error instanceof Error && error.message.includes('enableOfflineQueue options is false'));
}

/** An admission waiting for the end of the turn to go to Redis with the turn's others. */
interface QueuedAdmission {
  keys: string[];
  args: Array<string | number>;
  /** Its five values of the script's reply. */
  resolve(reply: number[]): void;
  reject(error: MeterUnavailableError): void;
}

export class RedisMeter implements Meter, AccessCheckedMeter, AccessFence {
  private readonly redis: ScriptedRedis<keyof typeof SCRIPTS>;
  /** False on a Redis Cluster: each admission is a call of its own. */
  private readonly batches: boolean;
  /** The admissions of this turn not yet sent; a flush is registered whenever there is one. */
  private queued: QueuedAdmission[] = [];
  /** Where this meter's keys live: every key is named under it. */
  readonly prefix: string;
  private readonly server = randomUUID().slice(0, 8);
  private sequence = 0;
  private closed = false;
  /** Admissions whose reply was lost, still to be taken back, and whether a loop is sending them. */
  private readonly lost = new Map<string, { keys: string[]; until: number }>();
  private sendingLost = false;

  constructor(target: RedisTarget, options: { prefix?: string } = {}) {
    this.prefix = options.prefix ?? 'shelfapi:';
    // Connection errors surface as failed commands (503); the client keeps reconnecting.
    this.redis = connectRedis(target, { scripts: SCRIPTS, connectTimeoutMs: COMMAND_TIMEOUT_MS, commandTimeoutMs: CLIENT_TIMEOUT_MS });
    this.batches = !(this.redis instanceof Cluster);
  }

  /** Resolves once connected, or rejects after the timeout (start-up waits for Redis). */
  ready(timeoutMs = 5000): Promise<void> {
    return redisReady(this.redis, timeoutMs);
  }

  private key(accountId: number, ...parts: Array<string | number>): string {
    return accountKey(this.prefix, accountId, ...parts);
  }

  private async script(name: keyof typeof SCRIPTS, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      return await this.redis[name](...keys, ...args);
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  async admit(r: AdmitRequest): Promise<Admission> {
    const admission = await this.admitChecked(r, NO_CHECK);
    if (admission === STALE) throw new Error('redis-meter: an admission without an access check came back stale');
    return admission;
  }

  async admitChecked(r: AdmitRequest, access: AccessCheck): Promise<Admission | typeof STALE> {
    const period = periodOf(r.now);
    const { reset } = monthBounds(r.now);
    const keys = admissionKeys(this.prefix, r);
    const member = `${r.now}-${this.server}-${this.sequence++}`;
    const giveUpAt = r.deadline ?? Date.now() + COMMAND_TIMEOUT_MS;
    const reply = this.sendAdmission(keys, [
      r.now,
      r.limits.perMinute,
      r.limits.monthly,
      r.quota ? 1 : 0,
      member,
      Math.floor(reset / 1000) + QUOTA_KEPT_AFTER_RESET_S,
      r.keyId,
      giveUpAt - REPLY_MARGIN_MS,
      access.held === null ? '' : access.held,
      access.known === null ? '' : access.known,
    ]);
    // A reply lost with the connection, before or after the deadline: Redis may have counted the request.
    reply.catch((error: unknown) => {
      if (mayHaveRun(error instanceof MeterUnavailableError ? error.cause : error)) this.undoOnceBack(keys, member);
    });
    const result = await settleMeterBy(giveUpAt, reply, 'metering', (late) => {
      if (late[0] === 1) this.undo(keys, member).catch(() => this.undoOnceBack(keys, member));
    });
    const [allowed = -1, remaining = 0, oldest = -1, used = 0, quotaAllowed = 0] = result;
    if (allowed === -1) throw new MeterUnavailableError(new Error('Redis ran the admission after its deadline'));
    if (allowed === -2) return STALE;
    if (allowed === 0) {
      const resetInMs = oldest < 0 ? WINDOW_MS : oldest + WINDOW_MS - r.now;
      return { burst: { allowed: false, remaining: 0, resetInMs }, quota: null };
    }
    return {
      burst: { allowed: true, remaining, resetInMs: oldest + WINDOW_MS - r.now },
      quota: { allowed: quotaAllowed === 1, used, period },
    };
  }

  /**
   * Sends one admission with others asked for in this turn: a call's first registers the flush that sends
   * what is queued (sendQueued) just before the turn's write, and a call that is full leaves at once. On a
   * Redis Cluster, or when the connection cannot write now, it goes at once and alone (and then fails at
   * once, as any command does).
   */
  private sendAdmission(keys: string[], args: Array<string | number>): Promise<number[]> {
    return new Promise<number[]>((resolve, reject) => {
      this.queued.push({ keys, args, resolve, reject });
      if (this.queued.length === 1) {
        if (!(this.batches && atTurnsWrite(this.redis, this.sendQueued))) this.sendQueued();
      } else if (this.queued.length === ADMISSIONS_PER_CALL) {
        this.sendQueued();
        writeTurnNow(this.redis);
      }
    });
  }

  /** Sends the queued admissions as one call (none: nothing), in the order they were asked for. */
  private readonly sendQueued = (): void => {
    const queued = this.queued;
    if (queued.length === 0) return;
    this.queued = [];
    this.sendCall(queued);
  };

  /**
   * One call of the script for these admissions; each gets its own five values. A failed call fails each of
   * them with its error: one whose reply was lost may have run, and each admission's caller undoes its own.
   */
  private sendCall(call: QueuedAdmission[]): void {
    const n = call.length;
    // The number of keys, every admission's keys, then every admission's arguments (ioredis flattens the lists).
    const parts = new Array<number | Array<string | number>>(1 + 2 * n);
    parts[0] = n * ADMISSION_KEYS;
    for (let i = 0; i < n; i++) {
      const admission = call[i]!;
      parts[1 + i] = admission.keys;
      parts[1 + n + i] = admission.args;
    }
    (this.redis.meterAdmit(...parts) as Promise<Array<number | string>>).then(
      (reply) => {
        // Never thrown from here: nothing awaits this promise.
        if (!Array.isArray(reply)) reply = [];
        for (let i = 0; i < n; i++) {
          const at = i * ADMISSION_REPLY;
          if (reply[at] === -3) call[i]!.reject(new MeterUnavailableError(new ReplyError(String(reply[at + 1])) as Error));
          else call[i]!.resolve(reply.slice(at, at + ADMISSION_REPLY) as number[]);
        }
      },
      (error: unknown) => {
        for (const admission of call) admission.reject(new MeterUnavailableError(error));
      },
    );
  }

  /**
   * Takes back an admission the server does not answer for (see the file comment), whatever it charged, if
   * Redis ran it; once, however often it is sent. A failure leaves it counted (over-counted at worst, as
   * for a refund that fails) unless the caller tries again.
   */
  private async undo(keys: string[], member: string): Promise<void> {
    const [burst = '', quota = '', keyday = '', , admitted = ''] = keys;
    await this.script('meterUndo', [burst, quota, keyday, admitted], [member]);
  }

  /**
   * An admission whose reply was lost: tried until Redis answers again (it restarts from its append-only
   * file, or the network comes back), as long as Redis keeps the admission's record.
   */
  private undoOnceBack(keys: string[], member: string): void {
    this.lost.set(member, { keys, until: Date.now() + ADMISSIONS_KEPT_S * 1000 });
    if (!this.sendingLost) void this.sendLost();
  }

  /**
   * One loop for all of them, so that a Redis that is away gets one attempt per pause, not one per request
   * that was in flight: each round sends them in order and stops at the first that fails.
   */
  private async sendLost(): Promise<void> {
    this.sendingLost = true;
    try {
      while (!this.closed && this.lost.size > 0) {
        for (const [member, { keys, until }] of this.lost) {
          if (Date.now() >= until) {
            this.lost.delete(member);
            continue;
          }
          try {
            await this.undo(keys, member);
            this.lost.delete(member);
          } catch {
            break;
          }
        }
        // Redis is still away (or loading its data): next round. Unreferenced: never keeps a closing process alive.
        if (this.lost.size > 0) await sleep(UNDO_RETRY_MS, undefined, { ref: false });
      }
    } finally {
      this.sendingLost = false;
    }
  }

  async refund(accountId: number, keyId: number, period: string, day: string, deadline?: number, token?: string): Promise<void> {
    const giveUpAt = deadline ?? Date.now() + COMMAND_TIMEOUT_MS;
    const keys = [this.key(accountId, 'quota', period), this.key(accountId, 'keyday', keyId, day), this.key(accountId, 'givenback', token ?? '')];
    const reply = this.script('meterRefund', keys, [giveUpAt - REPLY_MARGIN_MS, token === undefined ? 0 : 1, REFUND_TOKEN_KEPT_S]);
    const done = await settleMeterBy(giveUpAt, reply, 'the give-back');
    if (done !== 1) throw new MeterUnavailableError(new Error('Redis ran the give-back after its deadline'));
  }

  async markChanging(accountId: number): Promise<string> {
    const token = `${this.server}-${this.sequence++}`;
    // A command that may have run although it failed leaves a mark that expires: safe, as a mark only slows.
    await this.connected();
    await settleMeterBy(Date.now() + COMMAND_TIMEOUT_MS, this.script('accessMark', accessKeys(this.prefix, accountId), [token, ACCESS_MARK_KEPT_S]), 'marking a change');
    return token;
  }

  /**
   * Resolves once connected; rejects at the first connection error or after COMMAND_TIMEOUT_MS, so that a
   * change refused for want of Redis is refused at once (the command line connects for its first change).
   * A client already waiting to reconnect (its last attempt failed) rejects at once: the next attempt may be
   * up to a second away (redis-client.ts), and the settings screen must answer well within its deadline.
   */
  private async connected(): Promise<void> {
    if (this.redis.status === 'ready') return;
    const redis = this.redis;
    if (redis.status === 'reconnecting') throw new MeterUnavailableError(new Error('Redis is not reachable (reconnecting)'));
    await new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        redis.off('ready', onReady);
        redis.off('error', onError);
        if (error === undefined) resolve();
        else reject(new MeterUnavailableError(error));
      };
      const onReady = () => done();
      const onError = (error: Error) => done(error);
      const timer = setTimeout(() => done(new Error('Redis is not reachable')), COMMAND_TIMEOUT_MS);
      redis.once('ready', onReady);
      redis.once('error', onError);
    });
  }

  async settleChange(accountId: number, token: string, version: number | 'deleted'): Promise<void> {
    await this.raise(accountId, version, token);
  }

  async raiseAccessVersion(accountId: number, version: number | 'deleted'): Promise<void> {
    await this.raise(accountId, version, '');
  }

  private async raise(accountId: number, version: number | 'deleted', token: string): Promise<void> {
    const written = version === 'deleted' ? DELETED_VERSION : version;
    await settleMeterBy(
      Date.now() + COMMAND_TIMEOUT_MS,
      this.script('accessRaise', accessKeys(this.prefix, accountId), [written, token, ACCESS_VERSION_KEPT_S]),
      'writing an access version',
    );
  }

  async used(accountId: number, period: string): Promise<number> {
    try {
      return Number((await this.redis.get(this.key(accountId, 'quota', period))) ?? 0);
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  async keyUsage(accountId: number, keyId: number, sinceDay: string, untilDay = dayOf(Date.now())): Promise<KeyDailyUsage[]> {
    const days = daysBetween(sinceDay, untilDay);
    if (days.length === 0) return [];
    try {
      const counts = await this.redis.mget(...days.map((d) => this.key(accountId, 'keyday', keyId, d)));
      return days.map((day, i) => ({ day, requests: Number(counts[i] ?? 0) })).filter((d) => d.requests > 0);
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  async lastUsed(accountId: number, keyIds: number[]): Promise<Map<number, string>> {
    if (keyIds.length === 0) return new Map();
    try {
      const values = await this.redis.hmget(this.key(accountId, 'lastused'), ...keyIds.map(String));
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

  async burstUsed(accountId: number, now: number): Promise<number> {
    try {
      // The window is (now - 60 s, now], as the admission script prunes it.
      return await this.redis.zcount(this.key(accountId, 'burst'), `(${now - WINDOW_MS}`, now);
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  /**
   * One Redis answers, or every master of the cluster does: each one the slot map names (the client drops a
   * master it lost from its pool, so its pool alone would not show one missing).
   */
  async ping(): Promise<boolean> {
    // Readiness answers within COMMAND_TIMEOUT_MS, not the client's longer backstop.
    const by = Date.now() + COMMAND_TIMEOUT_MS;
    let nodes: Redis[] = [];
    if (this.redis instanceof Cluster) {
      const pool = new Map(this.redis.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]));
      const masters = new Set(this.redis.slots.map((owners) => owners[0]));
      if (masters.size === 0 || masters.has(undefined)) return false;
      for (const master of masters) {
        const node = master === undefined ? undefined : pool.get(master);
        if (node === undefined) return false;
        nodes.push(node);
      }
    } else {
      nodes = [this.redis];
    }
    try {
      const replies = await Promise.all(nodes.map((node) => settleBy(by, node.ping(), 'ping')));
      return replies.every((reply) => reply === 'PONG');
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.redis.disconnect();
  }
}
