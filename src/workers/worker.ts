/**
 * One worker of `serve --workers N`: the whole server (src/server.ts) on the shared API port, without the
 * ops port, which the primary serves for all of them. It answers the primary's readiness questions and
 * prom-client's requests for its metrics, and drains on SIGTERM exactly as a single process does.
 */
import { AggregatorRegistry } from 'prom-client';
import type { Config } from '../config.js';
import { closeOnSignals, startServer } from '../server.js';
import { isDrainOrder, isReadinessQuestion, type ReadinessAnswer } from './messages.js';

export async function runWorker(config: Readonly<Config>): Promise<void> {
  const server = await startServer(config, { ops: false });
  // prom-client answers the primary's requests from these registries (its listener is added by the constructor).
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([server.metrics.registry]);
  let ordered: () => void = () => {};
  const drainOrdered = new Promise<void>((resolve) => (ordered = resolve));
  process.on('message', (message: unknown) => {
    if (isDrainOrder(message)) {
      void server.drain(message.delayMs).then(ordered, () => process.exit(1));
      return;
    }
    if (!isReadinessQuestion(message)) return;
    void server.readiness().then((ready) => {
      const answer: ReadinessAnswer = { type: 'shelfapi:readiness', id: message.id, ...ready };
      if (process.connected) process.send?.(answer);
    });
  });
  // The primary orders the drain; a signal sent to the worker itself (or a terminal's Ctrl-C, which reaches
  // every process of the group) drains it too, and drain() runs once whichever comes first.
  await Promise.race([closeOnSignals(server, config.drainDelayMs), drainOrdered]);
  // The IPC channel would keep the process alive once the server has closed.
  process.disconnect?.();
}
