/**
 * A Prometheus counter of a running total kept elsewhere (a thread's restarts, a connection's reconnects),
 * read at each scrape. A Counter's collect may only add what is new since the last read; with --workers the
 * primary sums the workers' (prom-client's AggregatorRegistry).
 */
import { Counter, type Registry } from 'prom-client';

export function registerRunningTotal(registry: Registry, name: string, help: string, total: () => number): void {
  let counted = 0;
  const counter = new Counter({
    name,
    help,
    registers: [registry],
    aggregator: 'sum',
    collect() {
      const now = total();
      if (now > counted) counter.inc(now - counted);
      counted = now;
    },
  });
}
