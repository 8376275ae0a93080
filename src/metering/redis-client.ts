/**
 * The Redis clients of the meter and the owners' statistics: one Redis (REDIS_URL) or a Redis Cluster
 * (REDIS_CLUSTER_URLS), connected the same way for both, with their Lua scripts defined on the client.
 *
 * Scripts are ioredis commands (defineCommand): the client sends EVALSHA, and EVAL the first time on each
 * connection or after NOSCRIPT (a Redis restarted, failed over or told SCRIPT FLUSH), in pipelines too.
 * NOSCRIPT means the script did not run, so the one resent is the only one that counts. On a cluster the
 * client routes each by its first key's slot.
 */
import { Cluster, Redis } from 'ioredis';
import type { Config } from '../config.js';
import { MeterUnavailableError } from './meter.js';

/** Where a Redis is: one server (REDIS_URL), or the seed nodes of a Redis Cluster (REDIS_CLUSTER_URLS). */
export type RedisTarget = string | { cluster: string[] };

/** The configured Redis, or null when the meter and the statistics live in the database. */
export function redisTargetOf(config: Pick<Config, 'redisUrl' | 'redisClusterUrls'>): RedisTarget | null {
  return config.redisUrl ?? (config.redisClusterUrls === null ? null : { cluster: [...config.redisClusterUrls] });
}

export interface ScriptDefinition {
  /** Absent: the call's first argument is the number of keys (a script over as many keys as it is given). */
  numberOfKeys?: number;
  lua: string;
}

/** A client with scripts defined on it: each takes its keys, then its arguments. */
// An array argument is flattened by ioredis: a long list goes as one, not spread into the call.
export type ScriptedRedis<Name extends string> = (Redis | Cluster) & Record<Name, (...keysAndArgs: Array<string | number | ReadonlyArray<string | number>>) => Promise<unknown>>;

/** The pause before the next attempt to reconnect (one Redis) or to fetch the cluster's slot map again. */
const RECONNECT_DELAY_MS = (attempt: number) => Math.min(100 * attempt, 1000);

export function connectRedis<Name extends string>(
  target: RedisTarget,
  options: { scripts: Record<Name, ScriptDefinition>; connectTimeoutMs: number; commandTimeoutMs: number },
): ScriptedRedis<Name> {
  const perConnection = {
    maxRetriesPerRequest: 0,
    commandTimeout: options.commandTimeoutMs,
    connectTimeout: options.connectTimeoutMs,
  };
  let client: Redis | Cluster;
  if (typeof target === 'string') {
    client = new Redis(target, { ...perConnection, enableOfflineQueue: false, retryStrategy: RECONNECT_DELAY_MS, lazyConnect: false, scripts: options.scripts });
  } else {
    const seeds = target.cluster.map((url) => {
      const u = new URL(url);
      return { host: u.hostname, port: u.port === '' ? 6379 : Number(u.port) };
    });
    // The nodes of a cluster share one user, password and TLS setting: the first URL's apply to every node,
    // including those the client learns of from the slot map.
    const first = new URL(target.cluster[0] ?? 'redis://127.0.0.1:6379');
    const auth = {
      ...(first.username !== '' ? { username: decodeURIComponent(first.username) } : {}),
      ...(first.password !== '' ? { password: decodeURIComponent(first.password) } : {}),
      ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
    };
    client = new Cluster(seeds, {
      // No offline queue: while the slot map is unknown, commands fail at once (503), as with one Redis.
      enableOfflineQueue: false,
      clusterRetryStrategy: RECONNECT_DELAY_MS,
      // A moved slot or a failover is followed briefly; past the request's deadline settleBy answers 503.
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      slotsRefreshTimeout: options.connectTimeoutMs,
      redisOptions: { ...perConnection, ...auth },
      scripts: options.scripts,
    });
    // The cluster client reports each node's connection errors apart: a node going away must not either.
    client.on('node error', () => {});
  }
  // Connection errors surface as failed commands; the client keeps reconnecting. An 'error' event without a
  // listener would end the process.
  client.on('error', () => {});
  if (client instanceof Redis) coalesceWrites(client);
  // ioredis adds the defined commands at run time; its types do not list them.
  return client as ScriptedRedis<Name>;
}

/**
 * The commands sent in one turn of the event loop leave in one write: the first corks the connection and the
 * turn's check phase (setImmediate) uncorks it. ioredis writes each command apart, one system call each, and
 * on a busy server that call was a sixth of a request's CPU (docs/performance.md); its own auto-pipelining
 * batches too, but its bookkeeping cost more than it saved.
 *
 * Work registered with atTurnsWrite runs in that same setImmediate, just before the uncork: the meter gathers
 * a turn's admissions and sends them there as one script call (redis-admission-calls.ts), in the turn's write. With a
 * setImmediate of its own, the call would miss that write: after the uncork when the turn's first command came
 * first (a write of its own), or, when the admissions came first, corking anew from within the check phase
 * and so leaving at the next turn's.
 */
const turnsWork = new WeakMap<Redis, { register: (work: () => void) => boolean; writeNow: () => void }>();

function coalesceWrites(client: Redis): void {
  /** The connection corked for this turn, if one is. */
  let corkedSocket: Redis['stream'] | null = null;
  const beforeUncork: Array<() => void> = [];
  /** Corks the connection for the rest of the turn, unless it is corked already; false when it cannot write. */
  const cork = (): boolean => {
    if (corkedSocket !== null) return true;
    const socket = client.stream as Redis['stream'] | undefined;
    if (socket === undefined || !socket.writable) return false;
    corkedSocket = socket;
    socket.cork();
    setImmediate(() => {
      try {
        // Commands sent here join the turn's write: the connection is still corked.
        for (let i = 0; i < beforeUncork.length; i++) beforeUncork[i]!();
      } finally {
        beforeUncork.length = 0;
        corkedSocket = null;
        socket.uncork();
      }
    });
    return true;
  };
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    if (stream === undefined) cork();
    return send(command, stream);
  };
  turnsWork.set(client, {
    register: (work) => {
      if (!cork()) return false;
      beforeUncork.push(work);
      return true;
    },
    // What is written so far leaves now; the connection stays corked for the rest of the turn.
    writeNow: () => {
      if (corkedSocket === null) return;
      corkedSocket.uncork();
      corkedSocket.cork();
    },
  });
}

/**
 * Runs `work` at the end of this turn of the event loop, just before the turn's commands leave in one write
 * (coalesceWrites), so that the commands it sends leave in that write too. False, and `work` is not kept,
 * when the client is a Redis Cluster or its connection cannot write now (not connected, reconnecting): the
 * caller sends at once, and the command fails at once as any other does (there is no offline queue).
 */
export function atTurnsWrite(client: Redis | Cluster, work: () => void): boolean {
  const turn = client instanceof Redis ? turnsWork.get(client) : undefined;
  return turn !== undefined && turn.register(work);
}

/**
 * Sends what this turn has written to the connection so far, without waiting for the turn's end: the meter
 * sends a full call of admissions at once (redis-admission-calls.ts), so that Redis runs it while the turn goes on.
 */
export function writeTurnNow(client: Redis | Cluster): void {
  if (client instanceof Redis) turnsWork.get(client)?.writeNow();
}

/** Resolves once `redis` is connected, or rejects after the timeout (start-up waits for Redis). */
export async function redisReady(redis: Redis | Cluster, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new MeterUnavailableError(new Error('Redis is not reachable'))), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
