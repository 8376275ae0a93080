/**
 * The LISTEN connection's state on /metrics (PostgreSQL + Redis only: src/store/version-listener.ts). While it
 * is down every request reads PostgreSQL instead of using held principals: correct, but the database takes the
 * load the held principals spare it. Each series names how `serve --workers` sums it up in the primary
 * (prom-client's AggregatorRegistry): one worker down shows, the others listening do not hide it.
 */
import { Gauge, type Registry } from 'prom-client';
import { registerRunningTotal } from './running-total-counter.js';
import type { VersionListenerStatus } from '../store/version-listener.js';

export function registerVersionListenerMetrics(registry: Registry, status: () => VersionListenerStatus): void {
  const registeredAt = Date.now();
  new Gauge({
    name: 'shelfapi_version_listener_connected',
    help: '1 while the LISTEN connection for access and data version changes listens, 0 while it is down (every request then reads PostgreSQL); with --workers, the lowest of the workers',
    registers: [registry],
    aggregator: 'min',
    collect() {
      this.set(status().listening ? 1 : 0);
    },
  });
  registerRunningTotal(
    registry,
    'shelfapi_version_listener_reconnects_total',
    'Times the LISTEN connection was lost and listened again (notifications sent meanwhile were missed, so every held principal was dropped); with --workers, summed',
    () => status().reconnects,
  );
  new Gauge({
    name: 'shelfapi_version_listener_silence_seconds',
    help: 'Seconds since PostgreSQL was last heard on the LISTEN connection (a heartbeat answered every 250 ms, or a notification); grows while it is down; with --workers, the highest of the workers',
    registers: [registry],
    aggregator: 'max',
    collect() {
      const { lastHeardAt } = status();
      // Never heard yet: silent since the server started.
      this.set((Date.now() - (lastHeardAt ?? registeredAt)) / 1000);
    },
  });
}
