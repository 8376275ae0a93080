/**
 * Runs the API: migrates, picks the meter, listens on HOST:PORT, and serves /healthz, /readyz and the
 * Prometheus /metrics on OPS_PORT (never on the API port). SIGTERM: /readyz fails and answers close their
 * connections for DRAIN_DELAY_MS, then stop accepting, finish requests in flight, close the pools, exit 0.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { systemClock } from './clock.js';
import type { Config } from './config.js';
import { buildApp, type App } from './http/app.js';
import { createMeter } from './metering/create-meter.js';
import type { Meter } from './metering/meter.js';
import { createUsageStats } from './usage-stats/create-usage-stats.js';
import type { UsageStats } from './usage-stats/usage-stats.js';
import { migrateToLatest, openStore, warmPool, type Store } from './store/database.js';
import { sql } from 'kysely';
import { capYoungGeneration, keepAllocationsYoung, limitHeapGrowth } from './observability/heap-growth.js';
import { serverLogDestination } from './observability/log-destination.js';
import { Metrics } from './observability/metrics.js';
import { registerCheckpointMetrics } from './observability/sqlite-checkpoint-metrics.js';
import { startCheckpointThread, type CheckpointThread } from './store/sqlite-checkpoints.js';

export interface Readiness {
  store: 'ok' | 'unavailable';
  meter: 'ok' | 'unavailable';
}

export interface RunningServer {
  app: App;
  /** The ops port's server (/healthz, /readyz, /metrics); null in a worker of `serve --workers`, whose primary serves them. */
  ops: FastifyInstance | null;
  store: Store;
  meter: Meter;
  stats: UsageStats;
  metrics: Metrics;
  /** Whether the store and the meter answer now. */
  readiness(): Promise<Readiness>;
  /**
   * A rolling restart: for `delayMs`, /readyz answers 503 while every request is still served, each answer
   * with `Connection: close` (so that a kept-alive connection ends after its answer, never while a request
   * may be on its way); then close().
   */
  drain(delayMs: number): Promise<void>;
  close(): Promise<void>;
}

async function storeReachable(store: Store): Promise<boolean> {
  try {
    await sql`select 1`.execute(store.db);
    return true;
  } catch {
    return false;
  }
}

export async function startServer(
  config: Readonly<Config>,
  options: { store?: Store; ops?: boolean } = {},
): Promise<RunningServer> {
  // Before the load: the heap then stays near what is live, the young generation within Node 20's size, and a
  // request's objects in it (observability/heap-growth.ts).
  limitHeapGrowth();
  capYoungGeneration();
  keepAllocationsYoung();
  const store = options.store ?? openStore(config.database);
  await migrateToLatest(store);
  await warmPool(store);
  const meter = await createMeter(config, store);
  const metrics = new Metrics({ processMetrics: true });
  // Standard output with a bound on the log waiting to be written (a slow reader must not grow the heap);
  // readable lines instead of JSON when it is a terminal.
  const logStream = serverLogDestination({ onDrop: () => metrics.logLinesDropped.inc() });
  let app: App | null = null;
  // The owners' statistics, with STATS_THREAD, are written from a thread of their own (usage-stats/usage-stats-thread.ts).
  const stats = await createUsageStats(
    config,
    store,
    config.statsThread ? { thread: { onError: (err) => app?.log.error({ err }, 'the statistics thread failed; it is started again') } } : {},
  );
  app = await buildApp({ config, store, meter, clock: systemClock, metrics, stats, logStream });
  // SQLite: the WAL is copied into the file from a thread, not inside a commit on the event loop.
  let checkpoints: CheckpointThread | null = null;
  if (store.sqlite !== null && config.database.dialect === 'sqlite' && config.database.path !== ':memory:') {
    checkpoints = startCheckpointThread(store.sqlite, config.database.path, (err) => app?.log.error({ err }, 'the SQLite checkpoint thread failed; it is started again'));
    registerCheckpointMetrics(metrics.registry, checkpoints);
  }
  let draining = false;
  // Before Fastify's own listener: the header is set before any answer is written.
  app.server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
    if (draining) response.setHeader('connection', 'close');
  });
  const readiness = async (): Promise<Readiness> => {
    const [storeOk, meterOk] = await Promise.all([storeReachable(store), meter.ping()]);
    return { store: storeOk ? 'ok' : 'unavailable', meter: meterOk ? 'ok' : 'unavailable' };
  };
  let ops: FastifyInstance | null = null;
  if (options.ops !== false) {
    ops = Fastify({ logger: false });
    ops.get('/metrics', async (_request, reply) => {
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    });
    ops.get('/healthz', async () => ({ status: 'ok' }));
    ops.get('/readyz', async (_request, reply) => {
      if (draining) return reply.code(503).send({ status: 'draining' });
      const ready = await readiness();
      reply.code(ready.store === 'ok' && ready.meter === 'ok' ? 200 : 503);
      return ready;
    });
  }
  await app.listen({ host: config.host, port: config.port });
  await ops?.listen({ host: config.host, port: config.opsPort });
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      draining = true;
      await Promise.all([app.close(), ops?.close()]);
      // The owners' statistics of the last requests are still in memory: write them before the store closes.
      await stats.close().catch((err: unknown) => app.log.error({ err }, 'could not write the last per-key statistics'));
      await meter.close();
      await checkpoints?.close();
      await store.close();
    })());
  let drained: Promise<void> | null = null;
  const drain = (delayMs: number) =>
    (drained ??= (async () => {
      draining = true;
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      await close();
    })());
  return { app, ops, store, meter, stats, metrics, readiness, drain, close };
}

/** Requests in flight when the server stops listening get at most this long. */
const IN_FLIGHT_LIMIT_MS = 10_000;

/**
 * Drains and closes the server on SIGTERM (after `drainDelayMs`, see RunningServer.drain) or SIGINT (a
 * person at a terminal: at once), and resolves when it is closed; a second signal exits at once.
 */
export function closeOnSignals(server: RunningServer, drainDelayMs: number): Promise<void> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) process.exit(1);
      received = true;
      const delayMs = signal === 'SIGTERM' ? drainDelayMs : 0;
      server.app.log.info({ signal, drainDelayMs: delayMs }, 'shutting down: /readyz fails, answers close their connections, then requests in flight finish');
      const timer = setTimeout(() => process.exit(1), delayMs + IN_FLIGHT_LIMIT_MS);
      timer.unref();
      void server.drain(delayMs).then(resolve, () => process.exit(1));
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
}
