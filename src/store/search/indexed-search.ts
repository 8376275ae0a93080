/**
 * Searches answered from the in-memory index (search-index.ts) when it is current, by the store otherwise.
 *
 * The index belongs to one data version. Each search reads the version (one primary-key read, as the read
 * cache does) and uses the index only when it is for that version; then the page's rows are read by
 * primary key together with the version once more, and if a write landed in between, the store answers
 * instead. So the index is never used for data that changed, on any server. The database stays the source
 * of truth: the index holds ids, tokens and keys, never a row.
 *
 * The index is built in the background, in slices that yield to the event loop: when the app becomes ready,
 * whenever a request or the once-a-second check sees a new data version, and again until it catches up.
 * Until it is ready, the store answers as it always did (correct, slower).
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { sql, type Compilable, type Kysely } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import { openSqliteConnection, type Store } from '../database.js';
import { prepareQuery, type PreparedQuery } from '../prepared-query.js';
import { catalogueColumns, type CatalogueItem, type ItemFilters } from '../repositories/catalogue.repository.js';
import { toPage, type Page, type PageRequest } from '../repositories/page.js';
import { EXPORT_BATCH_ROWS, EXPORT_COLUMNS, exportPriceBatches, type ExportRow } from '../repositories/price-export.js';
import { priceColumns, type PriceFilters, type PriceRow } from '../repositories/price.repository.js';
import type { Database } from '../schema.js';
import { searchTerms } from '../search-text.js';
import { readSearchIndex } from './read-search-index.js';
import type { PricedRuns } from './priced-runs.js';
import { SearchIndex, type IndexQuery } from './search-index.js';

/** How often the data version is checked for a change made elsewhere (a load or import by another process). */
const POLL_MS = 1000;
/** Longest stretch of building between two yields to the event loop. */
const SLICE_MS = 4;
/** After a failed build, the next one waits this long: a store that keeps failing must not be read in full per request. */
const RETRY_AFTER_FAILURE_MS = 5000;

const dataVersionColumn = sql<number>`(select version from data_version where id = 1)`.as('dataVersion');

type Logger = Pick<FastifyBaseLogger, 'info' | 'warn'>;

export interface SearchIndexStatus {
  state: 'ready' | 'building' | 'off';
  version: number | null;
  items: number | null;
  bytes: number | null;
}

export class IndexedSearch {
  private index: SearchIndex | null = null;
  private building: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private failing = false;
  private lastFailure = 0;
  /** A page's rows by id with the data version, prepared once per number of ids. */
  private readonly catalogueRows = new RowsByIds((db, ids) =>
    db.selectFrom('catalogue_items as c').select(catalogueColumns).select(dataVersionColumn).where('c.master_item_id', 'in', ids).orderBy('c.master_item_id'),
  );
  private readonly priceRows = new RowsByIds((db, ids) =>
    db
      .selectFrom('current_prices as p')
      .innerJoin('catalogue_items as c', 'c.master_item_id', 'p.master_item_id')
      .select(priceColumns)
      .select(dataVersionColumn)
      .where('c.master_item_id', 'in', ids)
      .orderBy('c.master_item_id'),
  );

  constructor(
    private readonly store: Store,
    private readonly dataVersion: () => Promise<number>,
    private readonly log: Logger,
  ) {}

  /** Builds the index (resolves when built, or when building failed: then the store answers) and keeps it in step. */
  start(): Promise<void> {
    this.timer ??= setInterval(() => void this.refresh(), POLL_MS).unref();
    return this.refresh();
  }

  /** Stops keeping the index; a build in progress stops at its next slice. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.index = null;
  }

  status(): SearchIndexStatus {
    const index = this.index;
    return {
      // A stale index is dropped as soon as its successor is being built, so any index held is the last seen version's.
      state: this.closed || this.timer === null ? 'off' : index !== null ? 'ready' : 'building',
      version: index?.version ?? null,
      items: index?.size ?? null,
      bytes: index?.bytes ?? null,
    };
  }

  /**
   * Rebuilds the index until it is for the current data version; one build at a time (callers share it).
   * Never rejects: a failed build is logged and tried again at the next check.
   */
  refresh(): Promise<void> {
    if (this.building === null && this.failing && performance.now() - this.lastFailure < RETRY_AFTER_FAILURE_MS) return Promise.resolve();
    this.building ??= this.catchUp().finally(() => {
      this.building = null;
    });
    return this.building;
  }

  private async catchUp(): Promise<void> {
    try {
      for (;;) {
        const version = await this.dataVersion();
        if (this.closed || this.index?.version === version) return;
        // A stale index is never used again: let it go before the new one takes memory.
        this.index = null;
        const started = performance.now();
        const index = await readSearchIndex(this.store, this.slicer());
        if (this.closed) return;
        this.index = index;
        if (this.failing) this.failing = false;
        this.log.info(
          { version: index.version, items: index.size, bytes: index.bytes, precomputedTerms: index.precomputedTerms, ms: Math.round(performance.now() - started) },
          'search index built',
        );
      }
    } catch (error) {
      if (error instanceof BuildClosedError) return;
      // Once per streak: a store that stays away must not fill the log once a second.
      if (!this.failing) this.log.warn({ err: error }, 'search index build failed; the store answers searches meanwhile');
      this.failing = true;
      this.lastFailure = performance.now();
    }
  }

  /** A pause function for the build: yields once SLICE_MS of work has run, and stops a closed build. */
  private slicer(): () => Promise<void> {
    let sliceStart = performance.now();
    return async () => {
      if (performance.now() - sliceStart < SLICE_MS) return;
      await yieldToEventLoop();
      if (this.closed) throw new BuildClosedError();
      sliceStart = performance.now();
    };
  }

  /** The index if it is for `version`; otherwise null, and a rebuild starts. */
  private current(version: number): SearchIndex | null {
    const index = this.index;
    if (index !== null && index.version === version) return index;
    if (!this.closed && this.timer !== null) void this.refresh();
    return null;
  }

  /**
   * The query for filters with a search (or any filters, for a list page: `lists`), or null when the index
   * cannot answer it. `known` is the data version the caller has just read, if it has.
   */
  private async prepare(
    filters: ItemFilters,
    known?: number,
    lists = false,
  ): Promise<{ index: SearchIndex; version: number; query: IndexQuery } | null> {
    if (filters.search === undefined && !lists) return null;
    const terms = filters.search === undefined ? [] : searchTerms(filters.search);
    if (!SearchIndex.answers(terms)) return null;
    const version = known ?? (await this.dataVersion());
    const index = this.current(version);
    if (index === null) return null;
    const within =
      filters.upc === undefined
        ? undefined
        : (await this.store.db.selectFrom('current_prices').select('master_item_id').where('upc', '=', filters.upc).execute()).map((r) =>
            Number(r.master_item_id),
          );
    return {
      index,
      version,
      query: { terms, platform: filters.platform?.toLowerCase(), category: filters.category?.toLowerCase(), within },
    };
  }

  /**
   * A /catalogue page from the index, or null when the store must answer it: a search's, and a list's under
   * platform, category or UPC too (its total a popcount, a deep offset a skip over words, where the store
   * counts and steps through rows). `dataVersion`: the version the caller has just read (else it is read
   * here); the page is for that version or null.
   */
  async listCatalogue(filters: ItemFilters, page: PageRequest, dataVersion?: number): Promise<Page<CatalogueItem> | null> {
    const prepared = await this.prepare(filters, dataVersion, true);
    if (prepared === null) return null;
    const found = prepared.index.page(prepared.query, page.offset, page.limit);
    if (found === null) return null;
    const rows = found.ids.length === 0 ? [] : await this.catalogueRows.run(this.store, found.ids);
    if (!(await this.unchanged(prepared.version, rows))) return null;
    return toPage(rows.map(({ dataVersion: _version, ...item }) => item), found.total, page);
  }

  /** A /prices page from the index, or null when the store must answer it (as for listCatalogue). */
  async listPrices(filters: PriceFilters, page: PageRequest, dataVersion?: number): Promise<Page<PriceRow> | null> {
    const prepared = await this.prepare(filters, dataVersion, true);
    if (prepared === null) return null;
    const found = prepared.index.page({ ...prepared.query, pricedOnly: true }, page.offset, page.limit);
    if (found === null) return null;
    const rows = found.ids.length === 0 ? [] : await this.priceRows.run(this.store, found.ids);
    if (!(await this.unchanged(prepared.version, rows))) return null;
    return toPage(rows.map(({ dataVersion: _version, ...row }) => row), found.total, page);
  }

  /**
   * Whether the data version is still `version` after the page's rows were read: from the rows themselves
   * (read in the same statement), or read again when the page is empty and the store was asked meanwhile.
   */
  private async unchanged(version: number, rows: ReadonlyArray<{ dataVersion: number }>): Promise<boolean> {
    const after = rows.length > 0 ? Number(rows[0]!.dataVersion) : await this.dataVersion();
    return after === version;
  }

  /**
   * A filtered export's rows as runs of the unfiltered export's rows at `version` (which the price guide
   * file holds), for any filters the index answers (search, platform, upc and their combinations); null
   * when the index is not for `version` or cannot answer, or the UPC's items were read at another version.
   */
  async pricedRuns(filters: PriceFilters, version: number): Promise<PricedRuns | null> {
    const terms = filters.search === undefined ? [] : searchTerms(filters.search);
    if (!SearchIndex.answers(terms)) return null;
    const index = this.current(version);
    if (index === null) return null;
    let within: number[] | undefined;
    if (filters.upc !== undefined) {
      const rows = await this.store.db
        .selectFrom('current_prices')
        .select('master_item_id')
        .select(dataVersionColumn)
        .where('upc', '=', filters.upc)
        .execute();
      if (!(await this.unchanged(version, rows))) return null;
      within = rows.map((row) => Number(row.master_item_id));
    }
    return index.pricedRuns({ terms, platform: filters.platform?.toLowerCase(), within });
  }

  /**
   * The CSV export's rows: for a search the index gives every matching id and the rows are read by id in
   * batches (on SQLite from one snapshot on a connection of the export's own, checked to be the index's
   * version); anything else goes to the store's export as before.
   */
  async *exportBatches(filters: PriceFilters): AsyncGenerator<ExportRow[]> {
    const prepared = await this.prepare(filters);
    const ids = prepared?.index.allIds({ ...prepared.query, pricedOnly: true }) ?? null;
    if (prepared === null || ids === null) {
      yield* exportPriceBatches(this.store, filters);
      return;
    }
    const path = this.store.sqlitePath;
    if (path !== null && path !== ':memory:') {
      const conn = openSqliteConnection(path, { readonly: true });
      try {
        conn.exec('begin');
        if (Number(conn.prepare('select version from data_version where id = 1').pluck().get()) !== prepared.version) {
          conn.exec('commit');
          yield* exportPriceBatches(this.store, filters);
          return;
        }
        const statements = new Map<number, ReturnType<typeof conn.prepare>>();
        for (let at = 0; at < ids.length; at += EXPORT_BATCH_ROWS) {
          const batch = ids.slice(at, at + EXPORT_BATCH_ROWS);
          let statement = statements.get(batch.length);
          if (statement === undefined) {
            const compiled = this.pricesByIds(batch).compile();
            // The ids are the statement's only parameters, so it serves every batch of this size.
            if (compiled.parameters.length !== batch.length) throw new Error('export by ids: unexpected parameters');
            statement = conn.prepare(compiled.sql).raw(true);
            statements.set(batch.length, statement);
          }
          yield statement.all(batch) as ExportRow[];
        }
        conn.exec('commit');
      } finally {
        conn.close();
      }
      return;
    }
    for (let at = 0; at < ids.length; at += EXPORT_BATCH_ROWS) {
      const rows = await this.pricesByIds(ids.slice(at, at + EXPORT_BATCH_ROWS)).execute();
      yield rows.map((row) => EXPORT_COLUMNS.map((column) => row[column]));
    }
  }

  private pricesByIds(ids: number[]) {
    return this.store.db
      .selectFrom('current_prices as p')
      .innerJoin('catalogue_items as c', 'c.master_item_id', 'p.master_item_id')
      .select(priceColumns)
      .where('c.master_item_id', 'in', ids)
      .orderBy('c.master_item_id');
  }
}

/**
 * A query over a list of ids, run as a statement prepared once per length of the list (prepared-query.ts):
 * building, compiling and preparing it on every page cost more than running it. Pages hold at most the
 * largest limit, so a few dozen statements at most.
 */
class RowsByIds<Row> {
  private readonly byLength = new Map<number, PreparedQuery<number[], Row>>();

  constructor(private readonly build: (db: Kysely<Database>, ids: number[]) => Compilable<Row>) {}

  /** The rows of `ids` from `store` (always the same store for one instance). */
  run(store: Store, ids: number[]): Promise<Row[]> {
    let query = this.byLength.get(ids.length);
    if (query === undefined) {
      query = prepareQuery<number[], Row>(store, ids.length, (db, ...placeholders) => this.build(db, placeholders));
      this.byLength.set(ids.length, query);
    }
    return query(...ids);
  }
}

class BuildClosedError extends Error {
  constructor() {
    super('search index build stopped: closed');
  }
}
