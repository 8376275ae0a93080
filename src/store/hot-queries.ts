/** The queries every request or every single-item request runs, prepared once per store (prepared-query.ts). */
import type { Store } from './database.js';
import { prepareQuery } from './prepared-query.js';
import { dataVersionQuery } from './read-cache.js';
import { keyByHashQuery, type KeyWithAccount } from './repositories/api-key.repository.js';
import { catalogueItemQuery, catalogueItemsQuery, type CatalogueItem } from './repositories/catalogue.repository.js';
import { priceQuery, pricesByIdsQuery, type PriceRow } from './repositories/price.repository.js';

/** A key's row and the store's data version, read in one statement. */
export type KeyWithVersions = KeyWithAccount & { dataVersion: number };

/** The two versions a request checks, read in one statement: one snapshot, one round trip on PostgreSQL. */
export interface StoreVersions {
  /** The account's access version; undefined when the account is gone. */
  accessVersion: number | undefined;
  /** The served data's version (loads and imports bump it): what item and price answers are kept by. */
  dataVersion: number;
}

export interface HotQueries {
  keyByHash(hash: string): Promise<KeyWithVersions | undefined>;
  versions(accountId: number): Promise<StoreVersions>;
  catalogueItem(id: number): Promise<CatalogueItem | undefined>;
  price(masterItemId: number): Promise<PriceRow | undefined>;
  dataVersion(): Promise<number>;
}

/** No data_version row is a broken store: refuse rather than serve answers kept for some version. */
function presentVersion(version: number | string | bigint | null | undefined): number {
  if (version === null || version === undefined) throw new Error('the store has no data version');
  return Number(version);
}

export function hotQueries(store: Store): HotQueries {
  // Each version is a primary-key read in a scalar subquery, so neither depends on a join's plan.
  const key = prepareQuery(store, 1, (db, hash: string) =>
    keyByHashQuery(db, hash).select(() => dataVersionQuery(db).as('dataVersion')),
  );
  const versions = prepareQuery(store, 1, (db, accountId: number) =>
    db.selectNoFrom((eb) => [
      eb.selectFrom('accounts').select('access_version').where('id', '=', accountId).as('accessVersion'),
      dataVersionQuery(db).as('dataVersion'),
    ]),
  );
  let item: (id: number) => Promise<CatalogueItem[]>;
  let price: (id: number) => Promise<PriceRow[]>;
  if (store.dialect === 'postgres') {
    // A round trip per item read costs the process more than the rest of the request (docs/performance.md):
    // the reads of one turn of the event loop go together.
    const items = prepareQuery(store, 1, (db, ids: number[]) => catalogueItemsQuery(db, ids));
    const prices = prepareQuery(store, 1, (db, ids: number[]) => pricesByIdsQuery(db, ids));
    item = batchedById((ids) => items(ids), (row) => row.masterItemId);
    price = batchedById((ids) => prices(ids), (row) => row.masterItemId);
  } else {
    item = prepareQuery(store, 1, (db, id: number) => catalogueItemQuery(db, id));
    price = prepareQuery(store, 1, (db, id: number) => priceQuery(db, id));
  }
  const version = prepareQuery(store, 0, (db) => dataVersionQuery(db));
  return {
    keyByHash: async (hash) => {
      const row = (await key(hash))[0];
      return row === undefined ? undefined : { ...row, accessVersion: Number(row.accessVersion), dataVersion: presentVersion(row.dataVersion) };
    },
    versions: async (accountId) => {
      const row = (await versions(accountId))[0];
      return {
        accessVersion: row?.accessVersion === null || row?.accessVersion === undefined ? undefined : Number(row.accessVersion),
        dataVersion: presentVersion(row?.dataVersion),
      };
    },
    catalogueItem: async (id) => (await item(id))[0],
    price: async (id) => (await price(id))[0],
    dataVersion: async () => Number((await version())[0]?.version ?? 0),
  };
}

/** At most this many ids go in one statement; more wait for the next. */
const BATCH_MAX_IDS = 500;

/**
 * Reads by id asked for during one turn of the event loop (the requests that arrived together) go to the
 * store as one statement, after the turn (setImmediate); each caller gets the rows of its own id, as the
 * single-id read would return them. A failure fails every caller of that statement.
 */
export function batchedById<Row>(readMany: (ids: number[]) => Promise<Row[]>, idOf: (row: Row) => number): (id: number) => Promise<Row[]> {
  type Waiter = { resolve: (rows: Row[]) => void; reject: (error: unknown) => void };
  let waiting = new Map<number, Waiter[]>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const batch = waiting;
    waiting = new Map();
    const ids = [...batch.keys()];
    for (let start = 0; start < ids.length; start += BATCH_MAX_IDS) {
      const part = ids.slice(start, start + BATCH_MAX_IDS);
      readMany(part).then(
        (rows) => {
          const byId = new Map<number, Row[]>();
          for (const row of rows) {
            const id = Number(idOf(row));
            const list = byId.get(id);
            if (list === undefined) byId.set(id, [row]);
            else list.push(row);
          }
          for (const id of part) for (const waiter of batch.get(id) ?? []) waiter.resolve(byId.get(id) ?? []);
        },
        (error: unknown) => {
          for (const id of part) for (const waiter of batch.get(id) ?? []) waiter.reject(error);
        },
      );
    }
  };
  return (id) =>
    new Promise<Row[]>((resolve, reject) => {
      const list = waiting.get(id);
      if (list === undefined) waiting.set(id, [{ resolve, reject }]);
      else list.push({ resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
