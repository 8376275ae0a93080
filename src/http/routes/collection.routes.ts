/** GET /collection, /collection/value and /collection/:id: the key owner's collection only. */
import { Type, type Static } from 'typebox';
import { collectionValue, getCollectionItem, listCollection } from '../../store/repositories/collection.repository.js';
import type { App, RouteDeps } from '../app.js';
import { notFound } from '../errors.js';
import { dataOf, Id, listOf, Money, PageQuery, Timestamp } from '../schemas.js';
import { defineRoute } from './define-route.js';

export const CollectionItemSchema = Type.Object(
  {
    id: Type.Integer(),
    masterItemId: Type.Integer(),
    name: Type.String(),
    category: Type.String(),
    condition: Type.String({ enum: ['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY'] }),
    status: Type.String({ enum: ['OWNED', 'WISHLIST', 'SOLD'] }),
    platform: Type.String(),
    releaseYear: Type.Union([Type.Integer(), Type.Null()]),
    estimatedValue: Type.Number({ description: "Current price at the item's condition in US dollars; 0 where unknown" }),
    purchasePrice: Money,
    acquiredAt: Timestamp,
    location: Type.String({ description: 'User-defined label' }),
    isFavorite: Type.Boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);
export type CollectionItemBody = Static<typeof CollectionItemSchema>;

export const CollectionValueSchema = Type.Object(
  {
    ownedItems: Type.Integer({ description: 'Count of OWNED items' }),
    estimatedValue: Type.Number({ description: 'Sum of their estimated values in US dollars, rounded to cents' }),
  },
  { additionalProperties: false },
);

export function registerCollectionRoutes(app: App, deps: RouteDeps): void {
  defineRoute(app, {
    path: '/collection',
    tag: 'Collection',
    summary: "The key owner's collection",
    description: 'Ascending `id`.',
    scope: 'collection:read',
    quota: true,
    querystring: PageQuery,
    response: listOf(CollectionItemSchema),
    handler: async (request) => {
      const { limit = 50, offset = 0 } = request.query;
      return listCollection(deps.store.db, request.principal!.accountId, { limit, offset });
    },
  });

  defineRoute(app, {
    path: '/collection/value',
    tag: 'Collection',
    summary: 'Value of the owned items',
    description: 'Count and summed estimated value of the items in the `OWNED` state.',
    scope: 'collection:read',
    quota: true,
    response: dataOf(CollectionValueSchema),
    handler: async (request) => {
      const accountId = request.principal!.accountId;
      return { data: await deps.cache.get(`value\u0000${accountId}`, () => collectionValue(deps.store.db, accountId)) };
    },
  });

  defineRoute(app, {
    path: '/collection/:id',
    tag: 'Collection',
    summary: 'One collection item',
    description: "`404 not_found` when it does not exist or is not the key owner's.",
    scope: 'collection:read',
    quota: true,
    params: Type.Object({ id: Id('Collection item id') }, { additionalProperties: false }),
    itemNotFound: true,
    response: dataOf(CollectionItemSchema),
    handler: async (request) => {
      const item = await getCollectionItem(deps.store.db, request.principal!.accountId, request.params.id);
      if (!item) throw notFound(`No collection item ${request.params.id} in your collection.`);
      return { data: item };
    },
  });
}
