/** GET /collection, /collection/value and /collection/:id: the key owner's collection only. */
import { Type } from 'typebox';
import { CollectionItemSchema, CollectionValueSchema } from '../../../domain/resources.js';
import { collectionValue, getCollectionItem, listCollection } from '../../../store/repositories/collection.repository.js';
import type { App } from '../../app-types.js';
import type { RouteDeps } from './route-deps.js';
import { notFound } from '../../errors.js';
import { dataOf, Id, listOf, PageQuery } from '../schemas.js';
import { defineRoute } from './define-route.js';
import { ownerList } from './list-handlers.js';

export function registerCollectionRoutes(app: App, deps: RouteDeps): void {
  defineRoute(app, {
    path: '/collection',
    operationId: 'collection',
    tag: 'Collection',
    summary: "The key owner's collection",
    description: 'Ascending `id`.',
    quota: true,
    querystring: PageQuery,
    response: listOf(CollectionItemSchema),
    handler: ownerList(deps, listCollection),
  });

  defineRoute(app, {
    path: '/collection/value',
    operationId: 'collectionValue',
    tag: 'Collection',
    summary: 'Value of the owned items',
    description: 'Count and summed estimated value of the items in the `OWNED` state.',
    quota: true,
    response: dataOf(CollectionValueSchema),
    handler: async (request) => {
      const accountId = request.principal!.accountId;
      return { data: await deps.cache.get(JSON.stringify(['value', accountId]), () => deps.scans.run(() => collectionValue(deps.store.db, accountId))) };
    },
  });

  defineRoute(app, {
    path: '/collection/:id',
    operationId: 'collectionItem',
    tag: 'Collection',
    summary: 'One collection item',
    description: "`404 not_found` when it does not exist or is not the key owner's.",
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
