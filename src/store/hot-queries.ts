/** The queries every request or every single-item request runs, prepared once per store (prepared-query.ts). */
import type { Store } from './database.js';
import { prepareQuery } from './prepared-query.js';
import { accessVersionQuery, keyByHashQuery, type KeyWithAccount } from './repositories/api-key.repository.js';
import { catalogueItemQuery, type CatalogueItem } from './repositories/catalogue.repository.js';
import { priceQuery, type PriceRow } from './repositories/price.repository.js';

export interface HotQueries {
  keyByHash(hash: string): Promise<KeyWithAccount | undefined>;
  /** The account's access version; undefined when the account is gone. */
  accessVersion(accountId: number): Promise<number | undefined>;
  catalogueItem(id: number): Promise<CatalogueItem | undefined>;
  price(masterItemId: number): Promise<PriceRow | undefined>;
  dataVersion(): Promise<number>;
}

export function hotQueries(store: Store): HotQueries {
  const key = prepareQuery(store, 1, (db, hash: string) => keyByHashQuery(db, hash));
  const access = prepareQuery(store, 1, (db, accountId: number) => accessVersionQuery(db, accountId));
  const item = prepareQuery(store, 1, (db, id: number) => catalogueItemQuery(db, id));
  const price = prepareQuery(store, 1, (db, id: number) => priceQuery(db, id));
  const version = prepareQuery(store, 0, (db) => db.selectFrom('data_version').select('version').where('id', '=', 1));
  return {
    keyByHash: async (hash) => (await key(hash))[0],
    accessVersion: async (accountId) => {
      const row = (await access(accountId))[0];
      return row === undefined ? undefined : Number(row.accessVersion);
    },
    catalogueItem: async (id) => (await item(id))[0],
    price: async (id) => (await price(id))[0],
    dataVersion: async () => Number((await version())[0]?.version ?? 0),
  };
}
