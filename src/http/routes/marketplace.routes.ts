/** GET /listings, /offers and /transactions: the key owner's marketplace activity only. */
import { Type, type Static } from 'typebox';
import { listListings, listOffers, listTransactions } from '../../store/repositories/marketplace.repository.js';
import type { App, RouteDeps } from '../app.js';
import { listOf, Money, NullableTimestamp, PageQuery, Timestamp } from '../schemas.js';
import { defineRoute } from './define-route.js';

export const ListingSchema = Type.Object(
  {
    id: Type.Integer(),
    publicToken: Type.String({ pattern: '^pub_', description: 'Public handle of the listing, `pub_<token>`' }),
    masterItemId: Type.Integer(),
    title: Type.String(),
    category: Type.String(),
    condition: Type.String({ enum: ['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY'] }),
    status: Type.String({ enum: ['ACTIVE', 'RESERVED', 'SOLD', 'CANCELLED'] }),
    price: Money,
    currency: Type.String({ description: 'Currency code', examples: ['USD'] }),
    acceptsTrade: Type.Boolean(),
    shippingCost: Money,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);
export type ListingBody = Static<typeof ListingSchema>;

export const OfferSchema = Type.Object(
  {
    id: Type.Integer(),
    listingId: Type.Integer(),
    amount: Money,
    tradeItemId: Type.Union([Type.Integer(), Type.Null()], { description: "One of the offerer's collection items, or null" }),
    message: Type.String({ description: 'Text written by the offerer' }),
    status: Type.String({ enum: ['PENDING', 'ACCEPTED', 'DECLINED', 'WITHDRAWN', 'EXPIRED'] }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);
export type OfferBody = Static<typeof OfferSchema>;

export const TransactionSchema = Type.Object(
  {
    id: Type.Integer(),
    listingId: Type.Integer(),
    amount: Money,
    platformFee: Money,
    status: Type.String({ enum: ['PAID', 'SHIPPED', 'DELIVERED', 'COMPLETED', 'CANCELLED', 'REFUNDED'] }),
    trackingNumber: Type.String(),
    shippingCarrier: Type.String(),
    estimatedDelivery: Timestamp,
    actualDelivery: NullableTimestamp,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    role: Type.Union([Type.Literal('buyer'), Type.Literal('seller')], { description: "The key owner's side" }),
  },
  { additionalProperties: false },
);
export type TransactionBody = Static<typeof TransactionSchema>;

export function registerMarketplaceRoutes(app: App, deps: RouteDeps): void {
  defineRoute(app, {
    path: '/listings',
    tag: 'Marketplace',
    summary: "The key owner's listings",
    description: 'Ascending `id`.',
    scope: 'marketplace:read',
    quota: true,
    querystring: PageQuery,
    response: listOf(ListingSchema),
    handler: async (request) => {
      const { limit = 50, offset = 0 } = request.query;
      return listListings(deps.store.db, request.principal!.accountId, { limit, offset });
    },
  });

  defineRoute(app, {
    path: '/offers',
    tag: 'Marketplace',
    summary: 'Offers made by the key owner',
    description: 'Ascending `id`.',
    scope: 'marketplace:read',
    quota: true,
    querystring: PageQuery,
    response: listOf(OfferSchema),
    handler: async (request) => {
      const { limit = 50, offset = 0 } = request.query;
      return listOffers(deps.store.db, request.principal!.accountId, { limit, offset });
    },
  });

  defineRoute(app, {
    path: '/transactions',
    tag: 'Transactions',
    summary: "The key owner's transactions, as buyer or seller",
    description: 'Ascending `id`. `role` tells the key owner\'s side; nothing identifies the counterparty.',
    scope: 'transactions:read',
    quota: true,
    querystring: PageQuery,
    response: listOf(TransactionSchema),
    handler: async (request) => {
      const { limit = 50, offset = 0 } = request.query;
      return listTransactions(deps.store.db, request.principal!.accountId, { limit, offset });
    },
  });
}
