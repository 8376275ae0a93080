/** GET /listings, /offers and /transactions: the key owner's marketplace activity only. */
import { ListingSchema, OfferSchema, TransactionSchema } from '../../../domain/resources.js';
import { listListings, listOffers, listTransactions } from '../../../store/repositories/marketplace.repository.js';
import type { App } from '../../app-types.js';
import type { RouteDeps } from './route-deps.js';
import { listOf, PageQuery } from '../schemas.js';
import { defineRoute } from './define-route.js';
import { ownerList } from './list-handlers.js';

export function registerMarketplaceRoutes(app: App, deps: RouteDeps): void {
  defineRoute(app, {
    path: '/listings',
    operationId: 'listings',
    tag: 'Marketplace',
    summary: "The key owner's listings",
    description: 'Ascending `id`.',
    quota: true,
    querystring: PageQuery,
    response: listOf(ListingSchema),
    handler: ownerList(deps, listListings),
  });

  defineRoute(app, {
    path: '/offers',
    operationId: 'offers',
    tag: 'Marketplace',
    summary: 'Offers made by the key owner',
    description: 'Ascending `id`.',
    quota: true,
    querystring: PageQuery,
    response: listOf(OfferSchema),
    handler: ownerList(deps, listOffers),
  });

  defineRoute(app, {
    path: '/transactions',
    operationId: 'transactions',
    tag: 'Transactions',
    summary: "The key owner's transactions, as buyer or seller",
    description: 'Ascending `id`. `role` tells the key owner\'s side; nothing identifies the counterparty.',
    quota: true,
    querystring: PageQuery,
    response: listOf(TransactionSchema),
    handler: ownerList(deps, listTransactions),
  });
}
