/**
 * The Data API as one surface of the app: its OpenAPI document and reference page, the search index and price guide file its
 * list routes read, and every route under /developer/v1. Its request pipeline (api-pipeline.ts) is
 * installed on the root instance before this is registered.
 */
import type { AppDeps, App } from '../app-types.js';
import type { Metrics } from '../../observability/metrics.js';
import { registerSearchIndexMetrics } from '../../observability/search-index-metrics.js';
import type { HotQueries } from '../../store/hot-queries.js';
import { ReadCache } from '../../store/read-cache.js';
import { noScanLimit, ScanLimiter } from '../../store/scan-limiter.js';
import { IndexedSearch } from '../../store/search/indexed-search.js';
import { PriceGuide } from '../../export/price-guide.js';
import { registerOpenApi } from './openapi.js';
import { registerReferencePage } from './reference-page.js';
import { ListAnswers } from './routes/list-answers.js';
import { registerRoutes } from './routes/index.js';

import { API_PREFIX } from './api-prefix.js';

export { API_PREFIX };
/** List scans running at once per server on PostgreSQL; the rest of the pool stays free for lookups. */
const POSTGRES_SCAN_SLOTS = 2;
/** A list request waits this long for a scan slot, then answers 503: within the contract's 2 seconds. */
const SCAN_WAIT_MS = 1500;
/** How long start-up waits for the search index (a million items take a few seconds on an idle machine). */
const SEARCH_INDEX_READY_WAIT_MS = 8000;
/** How long start-up waits for the rows of an existing price guide file to be scanned. */
const GUIDE_READY_WAIT_MS = 1500;

/** The OpenAPI document and reference page; registered before any route, so the document sees them all. */
export async function registerApiDocs(app: App): Promise<void> {
  await registerOpenApi(app);
  await registerReferencePage(app);
}

/** The API's routes under its prefix, with the read cache, scan limiter and search index they share. */
export async function registerApiRoutes(app: App, deps: AppDeps, queries: HotQueries, metrics: Metrics): Promise<void> {
  const { store } = deps;
  const scans = store.dialect === 'postgres' ? new ScanLimiter(POSTGRES_SCAN_SLOTS, SCAN_WAIT_MS) : noScanLimit;
  // Built before the app is ready, so that a search's first request after start is answered from it; but
  // never waited for longer than SEARCH_INDEX_READY_WAIT_MS (Fastify fails a hook after 10 s): past that the
  // server serves, and the store answers searches until the index is built.
  const search = new IndexedSearch(store, queries.dataVersion, app.log);
  app.addHook('onReady', async () => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([search.start(), new Promise((resolve) => (timer = setTimeout(resolve, SEARCH_INDEX_READY_WAIT_MS)))]);
    clearTimeout(timer);
  });
  app.addHook('onClose', async () => search.close());
  registerSearchIndexMetrics(metrics.registry, () => search.status());
  const guide = new PriceGuide({ dir: deps.config.exportDir, store, dataVersion: queries.dataVersion, log: app.log });
  // Like the index: start-up waits a little for the rows of an existing file, so filtered exports are
  // copied from it from the first request; never for a write.
  app.addHook('onReady', async () => {
    guide.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([guide.ready(), new Promise((resolve) => (timer = setTimeout(resolve, GUIDE_READY_WAIT_MS)))]);
    clearTimeout(timer);
  });
  app.addHook('onClose', async () => guide.close());
  await app.register(
    async (api) => registerRoutes(api as unknown as App, { ...deps, queries, cache: new ReadCache(queries.dataVersion), scans, search, guide, answers: new ListAnswers() }),
    { prefix: API_PREFIX },
  );
}
