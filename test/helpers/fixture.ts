/**
 * A small dataset every HTTP test starts from: two active accounts (alice on enthusiast, bob on addon)
 * with data of their own, one lapsed account, one without a plan, and keys in every state.
 */
import type { Dataset } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';

export const FIXTURE_NOW = '2026-11-20T12:00:00.000Z';

export function fixture(): Dataset {
  const item = (masterItemId: number, name: string, extra: Partial<NonNullable<Dataset['catalogue']>[number]> = {}) => ({
    masterItemId,
    name,
    slug: `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${masterItemId}`,
    category: 'game',
    platform: 'Nintendo 64',
    status: 'PUBLISHED' as const,
    releaseYear: 1998,
    region: 'NTSC-U',
    format: 'Cartridge',
    developer: 'Nintendo EAD',
    publisher: 'Nintendo',
    genre: 'Adventure',
    manufacturer: null,
    description: `${name} for the Nintendo 64.`,
    imageUrl: `https://images.example.com/${masterItemId}.jpg`,
    ...extra,
  });
  return {
    accounts: [
      { ref: 'alice', email: 'alice@example.com', plan: 'enthusiast' },
      { ref: 'bob', email: 'bob@example.com', plan: 'addon', planStatus: 'active' },
      { ref: 'carol', email: 'carol@example.com', plan: 'addon', planStatus: 'lapsed' },
      { ref: 'dave', email: 'dave@example.com', plan: 'none' },
    ],
    keys: [
      { ref: 'alice', account: 'alice', name: 'all scopes', scopes: [...SCOPES] },
      { ref: 'alice-second', account: 'alice', name: 'second key', scopes: [...SCOPES] },
      { ref: 'alice-noscope', account: 'alice', name: 'no scopes', scopes: [] },
      { ref: 'alice-revoked', account: 'alice', name: 'revoked', scopes: [...SCOPES], revoked: true },
      { ref: 'alice-expired', account: 'alice', name: 'expired', scopes: [...SCOPES], expiresAt: '2026-01-01T00:00:00.000Z' },
      { ref: 'alice-expiring', account: 'alice', name: 'expires later', scopes: [...SCOPES], expiresAt: '2027-01-01T00:00:00.000Z' },
      { ref: 'bob', account: 'bob', name: 'all scopes', scopes: [...SCOPES] },
      { ref: 'carol', account: 'carol', name: 'lapsed plan', scopes: [...SCOPES] },
      { ref: 'dave', account: 'dave', name: 'no plan', scopes: [...SCOPES] },
    ],
    catalogue: [
      item(1, 'The Legend of Zelda: Ocarina of Time'),
      item(2, 'Pokémon Snap', { developer: 'HAL Laboratory', genre: 'Photography' }),
      item(3, 'Super Mario 64', { subCategory: 'Players Choice', modelNumber: 'NUS-NSME-USA' }),
      item(4, 'Sonic the Hedgehog', { platform: 'Sega Genesis', releaseYear: 1991, publisher: 'Sega', developer: 'Sonic Team' }),
      item(5, 'Draft Game', { status: 'DRAFT' }),
      item(6, 'Archived Game', { status: 'ARCHIVED' }),
      item(7, 'Nintendo 64 Console', {
        category: 'console', releaseYear: null, region: null, format: null, developer: null, publisher: null,
        genre: null, description: null, imageUrl: null, manufacturer: 'Nintendo',
      }),
      item(8, '100% Complete, "Deluxe" Edition_x', { platform: 'PlayStation' }),
      item(9, 'Café Racer', { platform: 'PlayStation' }),
      item(10, 'Pokemon Stadium'),
    ],
    prices: [
      { masterItemId: 1, upc: '045496870010', loose: 20, cib: 45.5, new: 300, boxOnly: 12, manualOnly: 8, scrapeDate: '2026-11-01T00:00:00.000Z' },
      { masterItemId: 1, upc: '045496870010', loose: 25, cib: 50.25, new: 320, boxOnly: null, manualOnly: 9, scrapeDate: '2026-11-15T00:00:00.000Z' },
      { masterItemId: 2, upc: '045496870027', loose: 15.1, cib: null, new: 90, scrapeDate: '2026-11-10T00:00:00.000Z' },
      { masterItemId: 3, upc: '045496870034', loose: 30, cib: 60, new: 500, boxOnly: 20, manualOnly: 10, scrapeDate: '2026-11-12T00:00:00.000Z' },
      { masterItemId: 4, upc: '010086010046', loose: 10, cib: 20, new: 150, scrapeDate: '2026-11-12T00:00:00.000Z' },
      { masterItemId: 5, upc: '000000000055', loose: 1, cib: 2, new: 3, scrapeDate: '2026-11-12T00:00:00.000Z' },
      { masterItemId: 8, upc: '711719000089', loose: 5.5, cib: 7.25, new: null, scrapeDate: '2026-11-12T00:00:00.000Z' },
      { masterItemId: 9, upc: '711719000096', loose: 3, scrapeDate: '2026-11-12T00:00:00.000Z' },
    ],
    collection: [
      { id: 1, account: 'alice', masterItemId: 1, condition: 'CIB', status: 'OWNED', purchasePrice: 40, acquiredAt: '2025-01-02T03:04:05.006Z', location: 'shelf A', isFavorite: true },
      { id: 2, account: 'alice', masterItemId: 2, condition: 'CIB', status: 'OWNED', purchasePrice: 10, acquiredAt: '2025-02-02T00:00:00.000Z', location: 'shelf A', isFavorite: false },
      { id: 3, account: 'alice', masterItemId: 3, condition: 'NEW', status: 'WISHLIST', purchasePrice: 0, acquiredAt: '2025-03-02T00:00:00.000Z', location: '', isFavorite: false },
      { id: 4, account: 'alice', masterItemId: 5, condition: 'LOOSE', status: 'OWNED', purchasePrice: 1, acquiredAt: '2025-03-02T00:00:00.000Z', location: 'box', isFavorite: false },
      { id: 5, account: 'alice', masterItemId: 4, condition: 'LOOSE', status: 'OWNED', purchasePrice: 5, acquiredAt: '2025-03-02T00:00:00.000Z', location: 'box', isFavorite: false },
      { id: 6, account: 'bob', masterItemId: 3, condition: 'NEW', status: 'OWNED', purchasePrice: 450, acquiredAt: '2025-04-02T00:00:00.000Z', location: 'safe', isFavorite: true },
      { id: 7, account: 'bob', masterItemId: 1, condition: 'LOOSE', status: 'SOLD', purchasePrice: 15, acquiredAt: '2025-05-02T00:00:00.000Z', location: 'gone', isFavorite: false },
    ],
    listings: [
      { id: 1, account: 'alice', masterItemId: 1, title: 'Zelda OoT, complete', condition: 'CIB', status: 'ACTIVE', price: 55, currency: 'USD', acceptsTrade: true, shippingCost: 5, publicToken: 'pub_alice1' },
      { id: 2, account: 'bob', masterItemId: 3, title: 'Sealed Mario 64', condition: 'NEW', status: 'ACTIVE', price: 520, currency: 'USD', acceptsTrade: false, shippingCost: 0 },
      { id: 3, account: 'bob', masterItemId: 1, title: 'Loose Zelda', condition: 'LOOSE', status: 'SOLD', price: 25, currency: 'USD', acceptsTrade: false, shippingCost: 4.5 },
    ],
    offers: [
      { id: 1, account: 'alice', listingId: 2, amount: 480, tradeItemId: 1, message: 'Would you take my Zelda?', status: 'PENDING' },
      { id: 2, account: 'bob', listingId: 1, amount: 50, tradeItemId: null, message: 'Offer from bob', status: 'DECLINED' },
    ],
    transactions: [
      { id: 1, buyer: 'alice', seller: 'bob', listingId: 3, amount: 25, platformFee: 2.5, status: 'SHIPPED', trackingNumber: '1Z999', shippingCarrier: 'UPS', estimatedDelivery: '2026-11-25T00:00:00.000Z', actualDelivery: null },
      { id: 2, buyer: 'bob', seller: 'alice', listingId: 1, amount: 55, platformFee: 5.5, status: 'DELIVERED', trackingNumber: '9400', shippingCarrier: 'USPS', estimatedDelivery: '2026-11-10T00:00:00.000Z', actualDelivery: '2026-11-09T15:00:00.000Z' },
    ],
  };
}
