/**
 * Builds the service as a Fastify instance without listening (src/server.ts listens): the server's options
 * and logger, then its two surfaces on the same services and store, the Data API (src/http/api: its
 * pipeline, documents and routes) and the owner's settings screen (src/http/settings).
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Metrics } from '../observability/metrics.js';
import { registerVersionListenerMetrics } from '../observability/version-listener-metrics.js';
import { hotQueries } from '../store/hot-queries.js';
import { ALLOW } from './api/api-methods.js';
import { apiPipeline } from './api/api-pipeline.js';
import { registerApiDocs, registerApiRoutes } from './api/api-surface.js';
import { parseQueryString } from './api/query-string.js';
import type { App, AppDeps } from './app-types.js';
import { clientAddressResolver } from './client-address.js';
import { connectHandler, connectionErrorHandler } from './connection-errors.js';
import { REDACTED_HEADER_PATHS, redactSecrets } from './log-redaction.js';
import { recogniseSecretsOf } from '../keys/secret-scan.js';
import { registerSettings } from './settings/settings-plugin.js';
import { registerSecretScanning } from './secret-scanning/secret-scanning-plugin.js';
import { registerAccessFence } from '../metering/access-change.js';
import { RedisMeter } from '../metering/redis-meter.js';
import { SqliteMeter } from '../metering/sqlite-meter.js';
import { VersionListener } from '../store/version-listener.js';

// Whoever builds the app (the server, the CLI, tests) names its types where it builds it.
export type { App, AppDeps } from './app-types.js';

const listeners = new WeakMap<App, VersionListener>();

/**
 * The app's LISTEN connection (PostgreSQL + Redis), or null when it has none: for a server that wants to
 * know whether it uses held principals now, and for tests.
 */
export function versionListenerOf(app: App): VersionListener | null {
  return listeners.get(app) ?? null;
}

export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, store, meter, clock } = deps;
  // A key's secret without its prefix is cut out of messages, log lines and the owners' request log only once
  // its checksum is known to hold, and the checksum covers the prefix.
  recogniseSecretsOf(config.keyPrefix);
  const stats = deps.stats ?? null;
  const metrics = deps.metrics ?? new Metrics();
  const queries = hotQueries(store);
  // PostgreSQL + Redis: principals held per server are checked by the meter's admission (one round trip),
  // kept current by the services' fence and by PostgreSQL's notifications (metering/access-change.ts,
  // store/version-listener.ts).
  let listener: VersionListener | null = null;
  if (store.dialect === 'postgres' && config.database.dialect === 'postgres' && meter instanceof RedisMeter) {
    registerAccessFence(store, meter);
    listener = new VersionListener({
      databaseUrl: config.database.url,
      writeAccessVersion: (accountId, version) => meter.raiseAccessVersion(accountId, version),
      onListening: () => pipeline.dropHeldPrincipals(),
      onEvent: (event, err) => {
        if (event === 'lost') app.log.warn({ err }, 'the LISTEN connection is down: every request reads PostgreSQL until it is back');
        else app.log.info('the LISTEN connection listens: held principals are used again');
      },
    });
  }
  // SQLite: the admission's transaction reads the account's access version and the data version beside its row.
  const heldPrincipals =
    listener !== null
      ? { meter: meter as RedisMeter, versions: listener }
      : meter instanceof SqliteMeter
        ? { meter, versions: { trusted: () => true, get dataVersion() { return meter.dataVersion; } } }
        : null;
  const pipeline = apiPipeline({ config, meter, clock, queries, metrics, stats, heldPrincipals });
  const app = Fastify({
    ...(deps.logger === undefined
      ? {
          logger: {
            level: config.logLevel,
            // Keys travel only in these two headers, settings sessions in the cookie; whatever logs a request's headers never shows them.
            redact: { paths: REDACTED_HEADER_PATHS, censor: '[redacted]' },
            // And whatever a line holds (a URL, an error's message), a key or a token in it is cut out, decoded or not.
            hooks: { streamWrite: redactSecrets },
            ...(deps.logStream ? { stream: deps.logStream } : {}),
          },
        }
      : deps.logger === false
        ? { logger: false }
        : { loggerInstance: deps.logger }),
    // One line per request is written by our onResponse hook, with the account and key ids.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    routerOptions: { ignoreTrailingSlash: true, caseSensitive: true, querystringParser: parseQueryString },
    exposeHeadRoutes: true,
    // A request arriving while the server drains is answered by the onRequest hook, in the contract's shape.
    return503OnClosing: false,
    requestTimeout: config.connections.requestTimeoutMs,
    keepAliveTimeout: config.connections.keepAliveTimeoutMs,
    http: {
      headersTimeout: config.connections.headersTimeoutMs,
      // Node checks the timeouts on this interval (30 s by default, so slow headers waited up to 90 s).
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.connections.headersTimeoutMs / 2)),
      // Node answers a missing Host with an empty 400 of its own; the onRequest hook answers it instead.
      requireHostHeader: false,
    },
    clientErrorHandler: connectionErrorHandler(ALLOW),
    frameworkErrors: pipeline.frameworkErrors,
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  app.server.maxConnections = config.connections.maxConnections;
  app.server.on('connect', connectHandler({ allow: ALLOW, log: app.log }));

  // Read only where needed (a key with allowed addresses, a last use, a security log line), so computed when read.
  const clientAddressOf = clientAddressResolver(config.trustProxy);
  app.decorateRequest('clientAddress', {
    getter(this: { raw: import('node:http').IncomingMessage }) {
      return clientAddressOf(this.raw);
    },
  });

  // The API's pipeline sits on the root instance: it answers every URL on the port that no surface claims.
  pipeline.install(app);
  await registerApiDocs(app);
  // The owner's settings screen: its own encapsulated pipeline (cookies, forms, CSRF), outside the API's.
  await registerSettings(app, deps);
  // GitHub's secret scanning reports (keys found public): signed, not keyed, not metered, not in the OpenAPI document.
  await registerSecretScanning(app, deps);
  await registerApiRoutes(app, deps, queries, metrics);
  if (listener !== null) {
    const running = listener;
    listeners.set(app, running);
    registerVersionListenerMetrics(metrics.registry, () => running.status());
    app.addHook('onClose', async () => running.close());
    running.start();
  }
  return app;
}
