/**
 * The primary of `serve --workers N`: forks N workers (node:cluster) that share the API port, and serves
 * the ops port for all of them: /healthz, /readyz (asking every worker whether its store and meter answer)
 * and /metrics (prom-client's AggregatorRegistry: each worker's registry, summed). It holds no store, no
 * meter and no cache: limits stay exact because every worker meters in the shared store, as separate
 * servers do. A worker that dies is replaced, after a back-off that grows while they keep dying. SIGTERM:
 * /readyz fails at once and every worker drains (src/server.ts); the primary exits when they have.
 */
import cluster, { type Worker } from 'node:cluster';
import Fastify from 'fastify';
import { pino, type Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import type { Config } from '../config.js';
import type { Readiness } from '../server.js';
import { isReadinessAnswer, type DrainOrder, type ReadinessQuestion } from './messages.js';

/** A worker not answering a readiness question within this time counts as not ready. */
const READINESS_TIMEOUT_MS = 2_000;
/** Deaths within this window make the next replacement wait longer: 0, 0.5 s, 1 s, 2 s, ... up to 30 s. */
const CRASH_WINDOW_MS = 60_000;
const MAX_BACKOFF_MS = 30_000;
/** After the drain delay, workers get this long to finish their requests in flight and close. */
const IN_FLIGHT_LIMIT_MS = 10_000;

export function respawnDelayMs(recentDeaths: number): number {
  if (recentDeaths <= 1) return 0;
  return Math.min(MAX_BACKOFF_MS, 500 * 2 ** (recentDeaths - 2));
}

export interface Primary {
  /** Resolves when the workers have drained and the primary has closed (its exit code: 0 when all exited cleanly). */
  closed: Promise<number>;
}

function workerName(worker: Worker): string {
  return `worker ${worker.id} (pid ${worker.process.pid ?? '?'})`;
}

/** Resolves once `count` workers are listening; rejects if one exits first (a start that fails fails the whole serve). */
function firstListening(workers: readonly Worker[]): Promise<void> {
  return new Promise((resolve, reject) => {
    let listening = 0;
    for (const worker of workers) {
      const onListening = () => {
        worker.off('exit', onExit);
        if (++listening === workers.length) resolve();
      };
      const onExit = (code: number | null, signal: string | null) => {
        worker.off('listening', onListening);
        reject(new Error(`${workerName(worker)} exited before it served (${signal ?? `exit code ${code}`}); its error is above`));
      };
      worker.once('listening', onListening);
      worker.once('exit', onExit);
    }
  });
}

async function askReadiness(worker: Worker, id: number): Promise<Readiness> {
  const unavailable: Readiness = { store: 'unavailable', meter: 'unavailable' };
  if (!worker.isConnected()) return unavailable;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      worker.off('message', onMessage);
      resolve(unavailable);
    }, READINESS_TIMEOUT_MS);
    const onMessage = (message: unknown) => {
      if (!isReadinessAnswer(message) || message.id !== id) return;
      clearTimeout(timer);
      worker.off('message', onMessage);
      resolve({ store: message.store, meter: message.meter });
    };
    worker.on('message', onMessage);
    const question: ReadinessQuestion = { type: 'shelfapi:readiness?', id };
    worker.send(question);
  });
}

export async function runPrimary(config: Readonly<Config>, count: number, log: Logger = pino({ level: config.logLevel })): Promise<Primary> {
  const aggregator = new AggregatorRegistry();
  /** Workers that have started listening and not exited: the ones that serve. */
  const serving = new Set<Worker>();
  const deaths: number[] = [];
  let stopping = false;
  let questions = 0;

  const fork = (): Worker => {
    const worker = cluster.fork();
    worker.once('listening', () => serving.add(worker));
    return worker;
  };

  const initial = Array.from({ length: count }, fork);
  try {
    await firstListening(initial);
  } catch (error) {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    throw error;
  }

  cluster.on('exit', (worker, code, signal) => {
    serving.delete(worker);
    if (stopping) return;
    const now = Date.now();
    deaths.push(now);
    while (deaths.length > 0 && deaths[0]! < now - CRASH_WINDOW_MS) deaths.shift();
    const delayMs = respawnDelayMs(deaths.length);
    log.error({ worker: worker.id, pid: worker.process.pid, code, signal, replaceInMs: delayMs }, 'a worker died: replacing it');
    setTimeout(() => {
      if (!stopping) fork();
    }, delayMs).unref();
  });

  const ops = Fastify({ logger: false });
  ops.get('/healthz', async () => ({ status: 'ok' }));
  ops.get('/readyz', async (_request, reply) => {
    if (stopping) return reply.code(503).send({ status: 'draining' });
    const answers = await Promise.all([...serving].map((worker) => askReadiness(worker, questions++)));
    const ready: Readiness = {
      store: answers.length > 0 && answers.every((a) => a.store === 'ok') ? 'ok' : 'unavailable',
      meter: answers.length > 0 && answers.every((a) => a.meter === 'ok') ? 'ok' : 'unavailable',
    };
    reply.code(ready.store === 'ok' && ready.meter === 'ok' ? 200 : 503);
    return ready;
  });
  ops.get('/metrics', async (_request, reply) => {
    const text = await aggregator.clusterMetrics();
    reply.type(aggregator.contentType);
    return text;
  });
  await ops.listen({ host: config.host, port: config.opsPort });

  const closed = new Promise<number>((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) process.exit(1);
      received = true;
      stopping = true;
      const delayMs = signal === 'SIGTERM' ? config.drainDelayMs : 0;
      log.info({ signal, drainDelayMs: delayMs, workers: serving.size }, 'shutting down: /readyz fails, every worker drains');
      const timer = setTimeout(() => {
        for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
        process.exit(1);
      }, delayMs + IN_FLIGHT_LIMIT_MS + 5_000);
      timer.unref();
      let code = 0;
      const remaining = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
      const exits = remaining.map(
        (worker) =>
          new Promise<void>((done) => {
            worker.once('exit', (exitCode, exitSignal) => {
              if (exitCode !== 0 || exitSignal !== null) code = 1;
              done();
            });
            const order: DrainOrder = { type: 'shelfapi:drain', delayMs };
            if (worker.isConnected()) worker.send(order);
          }),
      );
      void Promise.all(exits)
        .then(() => ops.close())
        .then(() => resolve(code));
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  return { closed };
}
