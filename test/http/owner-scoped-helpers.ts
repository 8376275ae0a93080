/**
 * What the owner-scoped tests read: the bodies of the owner-scoped routes as a client sees them, the list routes, and
 * readers of a whole list, its ids and /collection/value that check the status and shape on the way.
 */
import assert from 'node:assert/strict';
import { V1, type TestContext } from '../helpers/test-app.js';
import { body, queryString, type DataBody, type ListBody } from '../helpers/resource-fixtures.js';

export interface CollectionItemBody {
  id: number;
  masterItemId: number;
  name: string;
  category: string;
  condition: string;
  status: string;
  platform: string;
  releaseYear: number | null;
  estimatedValue: number;
  purchasePrice: number;
  acquiredAt: string;
  location: string;
  isFavorite: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface CollectionValueBody {
  ownedItems: number;
  estimatedValue: number;
}

export interface ListingBody {
  id: number;
  publicToken: string;
  masterItemId: number;
  title: string;
  category: string;
  condition: string;
  status: string;
  price: number;
  currency: string;
  acceptsTrade: boolean;
  shippingCost: number;
  createdAt: string;
  updatedAt: string;
}

export interface OfferBody {
  id: number;
  listingId: number;
  amount: number;
  tradeItemId: number | null;
  message: string;
  status: string;
  createdAt: string;
  updatedAt: string;
}

export interface TransactionBody {
  id: number;
  listingId: number;
  amount: number;
  platformFee: number;
  status: string;
  trackingNumber: string;
  shippingCarrier: string;
  estimatedDelivery: string;
  actualDelivery: string | null;
  createdAt: string;
  updatedAt: string;
  role: 'buyer' | 'seller';
}

export const OWNER_LISTS = ['/collection', '/listings', '/offers', '/transactions'] as const;

export async function listAll<T>(ctx: TestContext, path: string, key: string, params: Record<string, number> = {}): Promise<ListBody<T>> {
  const res = await ctx.get(`${V1}${path}${queryString(params)}`, key);
  assert.equal(res.statusCode, 200, `${path} as ${key}: ${res.statusCode} ${res.body}`);
  return body<ListBody<T>>(res);
}

export async function ids(ctx: TestContext, path: string, key: string): Promise<number[]> {
  const page = await listAll<{ id: number }>(ctx, path, key, { limit: 100 });
  assert.equal(page.pagination.total, page.data.length, `${path} total as ${key}`);
  return page.data.map((r) => r.id);
}

export async function value(ctx: TestContext, key: string): Promise<CollectionValueBody> {
  const res = await ctx.get(`${V1}/collection/value`, key);
  assert.equal(res.statusCode, 200);
  const got = body<DataBody<CollectionValueBody>>(res);
  assert.deepEqual(Object.keys(got), ['data']);
  assert.deepEqual(Object.keys(got.data).sort(), ['estimatedValue', 'ownedItems']);
  return got.data;
}
