/**
 * The meter in Redis, for many servers. One Lua script admits a request: it prunes and counts the
 * account's sliding window (a sorted set of request timestamps), records the request, and counts the
 * monthly quota and the key's day, all atomically in one round trip, so limits stay exact across any
 * number of servers. Every key expires, so nothing grows without bound.
 *
 * On one Redis, the admissions asked for during one turn of the event loop go together: one call of the
 * script runs them one after another, in the order asked, each exactly as it would run alone, and each
 * caller gets its own answer. Redis's cost of a call, and the client's of a command, are most of what an
 * admission costs (a busy server's turn holds several): redis-admission-calls.ts. The scripts' text is
 * redis-meter-script.ts.
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
 * a hash of its call (its first admission's account and minute) kept ADMISSIONS_KEPT_S; when the reply is
 * lost with the connection, the server sends the undo until Redis answers again. The undo reads that record
 * and deletes it: it takes back exactly what was charged, once, and nothing when the script never ran. A
 * late reply is undone the same way.
 * All of this holds for each admission of a call apart: each has its own deadline and member, a call whose
 * reply is lost has each of its admissions undone, and a late reply undoes those of its admissions that counted.
 * The undos of lost replies: redis-lost-admissions.ts.
 */
import { randomUUID } from 'node:crypto';
import { Cluster, type Redis } from 'ioredis';
import type { AccessCheck, AccessCheckedMeter, Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { admitUnchecked, MeterUnavailableError, settleMeterBy, STALE } from './meter.js';
import { connectRedis, redisReady, type RedisTarget, type ScriptedRedis } from './redis-client.js';
import { accountKey } from './redis-keys.js';
import { ACCESS_MARK_KEPT_S, ACCESS_VERSION_KEPT_S, DELETED_VERSION, accessKeys } from './redis-access-versions.js';
import type { AccessFence } from './access-change.js';
import { WINDOW_MS, dayOf, daysBetween, monthBounds, periodOf } from './periods.js';
import { DeadlineExceededError, settleBy } from '../deadline.js';
import { QUOTA_KEPT_AFTER_RESET_S, SCRIPTS, admissionKeys } from './redis-meter-script.js';
import { AdmissionCalls } from './redis-admission-calls.js';
import { LostAdmissions, mayHaveRun } from './redis-lost-admissions.js';

/** How long an admission without a request deadline (the CLI, tests), or a readiness ping, waits for Redis. */
const COMMAND_TIMEOUT_MS = 1000;
/** The client's own limit for every command: a backstop past any request deadline (see settleBy). */
const CLIENT_TIMEOUT_MS = 3000;
const REPLY_MARGIN_MS = 200;
/** A give-back's token is kept this long: past its last retry (give-back.ts retries for 10 minutes). */
const REFUND_TOKEN_KEPT_S = 15 * 60;

export { accountKey, STALE };

/**
 * The meter of PostgreSQL + Redis servers that hold principals (api-pipeline.ts): admits with the access check
 * (redis-access-versions.ts), and keeps each account's version as PostgreSQL notifies it.
 */
export interface RedisAccessCheckedMeter extends AccessCheckedMeter {
  /** Writes an account's version (never lower), as a NOTIFY from PostgreSQL said it (version-listener.ts). */
  raiseAccessVersion(accountId: number, version: number | 'deleted'): Promise<void>;
}

export class RedisMeter implements Meter, RedisAccessCheckedMeter, AccessFence {
  private readonly redis: ScriptedRedis<keyof typeof SCRIPTS>;
  /** The admissions of this turn, sent together (one call on one Redis; each alone on a cluster). */
  private readonly calls: AdmissionCalls;
  /** Where this meter's keys live: every key is named under it. */
  readonly prefix: string;
  private readonly server = randomUUID().slice(0, 8);
  private sequence = 0;
  /** Admissions whose reply was lost, still to be taken back. */
  private readonly lost = new LostAdmissions((keys, member) => this.undo(keys, member));

  constructor(target: RedisTarget, options: { prefix?: string } = {}) {
    this.prefix = options.prefix ?? 'shelfapi:';
    // Connection errors surface as failed commands (503); the client keeps reconnecting.
    this.redis = connectRedis(target, { scripts: SCRIPTS, connectTimeoutMs: COMMAND_TIMEOUT_MS, commandTimeoutMs: CLIENT_TIMEOUT_MS });
    this.calls = new AdmissionCalls(this.redis);
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

  admit(r: AdmitRequest): Promise<Admission> {
    return admitUnchecked(this, r);
  }

  async admitChecked(r: AdmitRequest, access: AccessCheck): Promise<Admission | typeof STALE> {
    const period = periodOf(r.now);
    const { reset } = monthBounds(r.now);
    const keys = admissionKeys(this.prefix, r);
    const member = `${r.now}-${this.server}-${this.sequence++}`;
    const giveUpAt = r.deadline ?? Date.now() + COMMAND_TIMEOUT_MS;
    const reply = this.calls.send(keys, [
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
      if (mayHaveRun(error instanceof MeterUnavailableError ? error.cause : error)) this.lost.add(keys, member);
    });
    const result = await settleMeterBy(giveUpAt, reply, 'metering', (late) => {
      if (late[0] === 1) this.undo(keys, member).catch(() => this.lost.add(keys, member));
    });
    const [allowed = -1, remaining = 0, oldest = -1, used = 0, quotaAllowed = 0] = result;
    // Redis answered, past the deadline: a late request, not a Redis outage (key-gate.ts tells them apart).
    if (allowed === -1) throw new MeterUnavailableError(new DeadlineExceededError('the admission at Redis'));
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
   * Takes back an admission the server does not answer for (see the file comment), whatever it charged, if
   * Redis ran it; once, however often it is sent. A failure leaves it counted (over-counted at worst, as
   * for a refund that fails) unless the caller tries again.
   */
  private async undo(keys: string[], member: string): Promise<void> {
    const [burst = '', quota = '', keyday = '', , , , admitted = ''] = keys;
    await this.script('meterUndo', [burst, quota, keyday, admitted], [member]);
  }


  async refund(accountId: number, keyId: number, period: string, day: string, deadline?: number, token?: string): Promise<void> {
    const giveUpAt = deadline ?? Date.now() + COMMAND_TIMEOUT_MS;
    const keys = [this.key(accountId, 'quota', period), this.key(accountId, 'keyday', keyId, day), this.key(accountId, 'givenback', token ?? '')];
    const reply = this.script('meterRefund', keys, [giveUpAt - REPLY_MARGIN_MS, token === undefined ? 0 : 1, REFUND_TOKEN_KEPT_S]);
    const done = await settleMeterBy(giveUpAt, reply, 'the give-back');
    if (done !== 1) throw new MeterUnavailableError(new DeadlineExceededError('the give-back at Redis'));
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
    this.lost.close();
    this.redis.disconnect();
  }
}
