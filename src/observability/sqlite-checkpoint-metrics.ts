/**
 * The SQLite checkpoint thread on /metrics (store/sqlite-checkpoints.ts). WAL pages behind that keep
 * growing say the thread cannot keep up (past 16,384 the serving connection checkpoints on the event loop
 * again, and answers slow); restarts say it failed.
 */
import { Gauge, type Registry } from 'prom-client';
import { registerRunningTotal } from './running-total-counter.js';
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
  registerRunningTotal(
    registry,
    'shelfapi_sqlite_checkpoint_thread_restarts_total',
    'Times the SQLite checkpoint thread stopped and was started again; with --workers, summed',
    () => thread.restarts,
  );
}
