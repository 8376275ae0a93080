/** The queries every request or every single-item request runs, prepared once per store (prepared-query.ts). */
import type { Store } from './database.js';
import { prepareQuery } from './prepared-query.js';
import { dataVersionQuery } from './read-cache.js';
import { keyByHashQuery, type KeyWithAccount } from './repositories/api-key.repository.js';
import { catalogueItemQuery, type CatalogueItem } from './repositories/catalogue.repository.js';
import { priceQuery, type PriceRow } from './repositories/price.repository.js';

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
  const item = prepareQuery(store, 1, (db, id: number) => catalogueItemQuery(db, id));
  const price = prepareQuery(store, 1, (db, id: number) => priceQuery(db, id));
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
