/**
 * Prometheus metrics, served on the ops port at /metrics: requests by route and status, latency, metering
 * outcomes, store errors, and the process's own (memory, event-loop delay). One registry per app, so tests
 * that build many apps never share counters.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type MeterOutcome = 'admitted' | 'counted' | 'rate_limited' | 'quota_exceeded' | 'unavailable' | 'given_back' | 'not_modified';

export class Metrics {
  readonly registry = new Registry();
  /**
   * Requests and meter outcomes since the last read, counted in maps keyed by the label values and added
   * to the counters when they are read (prom-client calls `collect` before every read): prom-client's
   * `inc` builds and looks up a string of its labels on every call, and these count every request.
   */
  readonly #requestCounts = new Map<string, Map<string, Map<number, number>>>();
  readonly #outcomeCounts = new Map<MeterOutcome, number>();

  readonly requests = new Counter({
    name: 'shelfapi_http_requests_total',
    help: 'Requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
    collect: () => {
      for (const [route, byMethod] of this.#requestCounts) {
        for (const [method, byStatus] of byMethod) {
          for (const [status, count] of byStatus) this.requests.inc({ route, method, status }, count);
        }
      }
      this.#requestCounts.clear();
    },
  });
  readonly duration = new Histogram({
    name: 'shelfapi_http_request_duration_seconds',
    help: 'Time from the request to its answer, by route pattern',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly meter = new Counter({
    name: 'shelfapi_meter_outcomes_total',
    help: 'Metering decisions: admitted (burst), counted (quota), rate_limited, quota_exceeded, unavailable, given_back (5xx), not_modified (304, quota given back)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
    collect: () => {
      for (const [outcome, count] of this.#outcomeCounts) this.meter.inc({ outcome }, count);
      this.#outcomeCounts.clear();
    },
  });
  readonly storeErrors = new Counter({
    name: 'shelfapi_store_errors_total',
    help: 'Errors from the data store or meter: unavailable (503) or unexpected (500)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly logLinesDropped = new Counter({
    name: 'shelfapi_log_lines_dropped_total',
    help: 'Log lines dropped because standard output was not read fast enough (log-destination.ts)',
    registers: [this.registry],
  });

  constructor(options: { processMetrics?: boolean } = {}) {
    // Event-loop delay at 1 ms resolution: the export must keep it low while it streams.
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 1 });
  }

  outcome(outcome: MeterOutcome): void {
    this.#outcomeCounts.set(outcome, (this.#outcomeCounts.get(outcome) ?? 0) + 1);
  }

  /** One answered request, by its route pattern, method and status. */
  countRequest(route: string, method: string, status: number): void {
    let byMethod = this.#requestCounts.get(route);
    if (byMethod === undefined) this.#requestCounts.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }
}
