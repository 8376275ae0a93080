/** GET /listings, /offers and /transactions: the key owner's marketplace activity only. */
import { ListingSchema, OfferSchema, TransactionSchema } from '../../../domain/resources.js';
import { listListings, listOffers, listTransactions } from '../../../store/repositories/marketplace.repository.js';
import type { App } from '../../app-types.js';
import type { RouteDeps } from './route-deps.js';
import { listOf, PageQuery } from '../schemas.js';
import { defineRoute } from './define-route.js';




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
