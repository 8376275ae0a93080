/**
 * What every route is given. Its own module, below api-surface.ts (which builds it and registers the
 * routes), so that a route can name it without importing the module that imports the route.
 */
import type { PriceGuide } from '../../../export/price-guide.js';
import type { HotQueries } from '../../../store/hot-queries.js';
import type { ReadCache } from '../../../store/read-cache.js';
import type { ScanRunner } from '../../../store/scan-limiter.js';
import type { IndexedSearch } from '../../../store/search/indexed-search.js';
import type { AppDeps } from '../../app-types.js';
import type { ListAnswers } from './list-answers.js';

/** What routes are given: the app's dependencies and the store's prepared hot queries. */
export interface RouteDeps extends AppDeps {
  queries: HotQueries;
  /** Totals and collection values, kept while the data version is unchanged. */
  cache: ReadCache;
  /** Runs list scans a few at a time on PostgreSQL (scan-limiter.ts). */
  scans: ScanRunner;
  /** Searches from the in-memory index while it is current (store/search/indexed-search.ts). */
  search: IndexedSearch;
  /** The filtered lists' answers as sent, kept per data version (list-answers.ts). */
  answers: ListAnswers;
  /** The unfiltered CSV export as a file per data version (src/export/price-guide.ts). */
  guide: PriceGuide;
}
