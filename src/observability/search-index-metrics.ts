/** Gauges of the in-memory search index on /metrics: its size in items and bytes, and whether it is current. */
import { Gauge, type Registry } from 'prom-client';
import type { SearchIndexStatus } from '../store/search/indexed-search.js';

export function registerSearchIndexMetrics(registry: Registry, status: () => SearchIndexStatus): void {
  new Gauge({
    name: 'shelfapi_search_index_bytes',
    help: 'Memory held by the in-memory search index (typed arrays and token string), 0 while none is built',
    registers: [registry],
    collect() {
      this.set(status().bytes ?? 0);
    },
  });
  new Gauge({
    name: 'shelfapi_search_index_items',
    help: 'Published items in the in-memory search index, 0 while none is built',
    registers: [registry],
    collect() {
      this.set(status().items ?? 0);
    },
  });
  new Gauge({
    name: 'shelfapi_search_index_ready',
    help: '1 when the search index is built for the data version last seen, 0 while it is built or rebuilt (the store answers searches meanwhile)',
    registers: [registry],
    collect() {
      this.set(status().state === 'ready' ? 1 : 0);
    },
  });
}
