/**
 * What the app is built from and what it is: its own module, below app.ts and the surfaces it registers,
 * so that the routes can name these types without importing the module that imports them.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Meter } from '../metering/meter.js';
import type { UsageStats } from '../usage-stats/usage-stats.js';
import type { Metrics } from '../observability/metrics.js';
import type { Store } from '../store/database.js';

export interface AppDeps {
  config: Readonly<Config>;
  store: Store;
  meter: Meter;
  clock: Clock;
  /** A pino logger or `false`; by default, the production logger app.ts builds (JSON lines, keys redacted). */
  logger?: FastifyBaseLogger | false;
  /** Where the default logger writes (standard output unless given); tests read it back. */
  logStream?: { write(line: string): void };
  /** Where request and metering metrics go (the server serves them on the ops port). */
  metrics?: Metrics;
  /** The owners' per-key statistics; without it, requests are not recorded for them. */
  stats?: UsageStats;
}

export type App = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
