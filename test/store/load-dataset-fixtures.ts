// What the dataset loader's tests share: stores opened for a test, closed when the file ends, and a valid
// second file for a store that holds the fixture, so that each refusal case breaks exactly one rule of the
// file that the other tests load.
import { after } from 'node:test';
import type { Store } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { FIXTURE_NOW, fixture } from '../helpers/fixture.js';
import { openTestStore } from '../helpers/test-app.js';

export const NOW = Date.parse(FIXTURE_NOW);
export const NOW_ISO = new Date(NOW).toISOString();
export const LOAD = { keyPrefix: 'shelf', now: NOW };

const stores: Array<{ store: Store; databaseUrl: string; close(): Promise<void> }> = [];
after(async () => {
  for (const opened of stores) await opened.close();
});
export const urlOf = (store: Store): string => stores.find((s) => s.store === store)!.databaseUrl;

/** A new SQLite store, with the shared fixture already loaded unless told otherwise. */
export async function newStore(withFixture = true): Promise<Store> {
  const opened = await openTestStore();
  stores.push(opened);
  const store = opened.store;
  if (withFixture) await loadDataset(store, fixture(), LOAD);
  return store;
}

export type Row = Record<string, unknown>;
export type Rows = Record<string, Row[]>;

export function item(masterItemId: number | undefined, name: string): Row {
  return {
    ...(masterItemId === undefined ? {} : { masterItemId }),
    name,
    slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
    category: 'game',
    platform: 'Sega Saturn',
    status: 'PUBLISHED',
    subCategory: null,
    modelNumber: 'MK-81086',
    releaseYear: 1996,
    region: 'NTSC-U',
    format: 'CD',
    developer: 'Sonic Team',
    publisher: 'Sega',
    genre: 'Action',
    manufacturer: null,
    description: `${name} for the Saturn.`,
    imageUrl: 'https://images.example.com/saturn.jpg',
  };
}

/**
 * A valid second file for a store that holds the fixture: two new accounts with data that points at rows of
 * this file and of the store. Each refusal case below breaks exactly one rule of it.
 */
export function extra(): Rows {
  return {
    accounts: [
      { ref: 'eve', email: 'eve@example.com', plan: 'enthusiast' },
      { ref: 'frank', email: 'frank@example.com', plan: 'addon', planStatus: 'active' },
    ],
    keys: [
      { ref: 'eve-key', account: 'eve', name: 'ci', scopes: ['catalogue:read', 'prices:read'] },
      { ref: 'frank-key', account: 'frank', name: 'ci', scopes: [], expiresAt: null, revoked: false },
    ],
    catalogue: [item(101, 'NiGHTS into Dreams'), item(102, 'Panzer Dragoon Saga'), item(103, 'Guardian Heroes')],
    prices: [
      { masterItemId: 101, upc: '010086810118', loose: 20, cib: 35, new: null, boxOnly: 5, manualOnly: 4, scrapeDate: '2026-11-01T00:00:00.000Z' },
      { masterItemId: 102, upc: '010086810125', loose: 300, cib: 450, new: 1200, scrapeDate: '2026-11-01T00:00:00Z' },
      { masterItemId: 2, upc: '045496870027', loose: 16, scrapeDate: '2026-11-18T00:00:00.000Z' },
    ],
    collection: [
      { id: 101, account: 'eve', masterItemId: 101, condition: 'CIB', status: 'OWNED', purchasePrice: 25, acquiredAt: '2024-01-01T00:00:00.000Z', location: 'shelf B', isFavorite: true },
      { id: 102, account: 'frank', masterItemId: 102, condition: 'LOOSE', status: 'OWNED', purchasePrice: 250, acquiredAt: '2024-02-01T00:00:00.000Z', location: 'safe', isFavorite: false },
      { id: 103, account: 'eve', masterItemId: 1, condition: 'NEW', status: 'WISHLIST', purchasePrice: 0, acquiredAt: '2024-03-01T00:00:00.000Z', location: '', isFavorite: false },
    ],
    listings: [
      { id: 101, account: 'eve', masterItemId: 101, title: 'NiGHTS CIB', condition: 'CIB', status: 'ACTIVE', price: 40, currency: 'USD', acceptsTrade: true, shippingCost: 5, publicToken: 'pub_eve101' },
      { id: 102, account: 'frank', masterItemId: 102, title: 'PDS loose', condition: 'LOOSE', status: 'ACTIVE', price: 320, currency: 'USD', acceptsTrade: false, shippingCost: 0 },
    ],
    offers: [
      { id: 101, account: 'frank', listingId: 101, amount: 35, tradeItemId: 102, message: 'trade?', status: 'PENDING' },
      { id: 102, account: 'eve', listingId: 102, amount: 300, tradeItemId: null, message: 'cash', status: 'DECLINED' },
      // An offer on a listing of the store (alice's listing 1), made by an account of this file.
      { id: 103, account: 'eve', listingId: 1, amount: 45, message: 'hi alice', status: 'PENDING' },
    ],
    transactions: [
      { id: 101, buyer: 'frank', seller: 'eve', listingId: 101, amount: 40, platformFee: 4, status: 'PAID', trackingNumber: '', shippingCarrier: 'UPS', estimatedDelivery: '2026-11-25T00:00:00.000Z', actualDelivery: null },
      { id: 102, buyer: 'eve', seller: 'frank', listingId: 102, amount: 320, platformFee: 32, status: 'COMPLETED', trackingNumber: '1Z1', shippingCarrier: 'USPS', estimatedDelivery: '2026-11-05T00:00:00.000Z', actualDelivery: '2026-11-04T10:00:00.000Z' },
    ],
  };
}
