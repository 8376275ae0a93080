/**
 * The SQLite checkpoint thread on /metrics (store/sqlite-checkpoints.ts). WAL pages behind that keep
 * growing say the thread cannot keep up (past 16,384 the serving connection checkpoints on the event loop
 * again, and answers slow); restarts say it failed.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CheckpointThread } from '../store/sqlite-checkpoints.js';

export function registerCheckpointMetrics(registry: Registry, thread: CheckpointThread): void {
  new Gauge({
    name: 'shelfapi_sqlite_wal_pages_behind',
    help: 'SQLite WAL pages not yet copied into the database file at the checkpoint thread\'s last checkpoint; with --workers, the highest of the workers',
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.set(thread.walPagesBehind);
    },
  });
  // A Counter's collect may only add what is new since the last read.
  let counted = 0;
  const restarts = new Counter({
    name: 'shelfapi_sqlite_checkpoint_thread_restarts_total',
    help: 'Times the SQLite checkpoint thread stopped and was started again; with --workers, summed',
    registers: [registry],
    aggregator: 'sum',
    collect() {
      if (thread.restarts > counted) restarts.inc(thread.restarts - counted);
      counted = thread.restarts;
    },
  });
}
