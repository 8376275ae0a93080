/** GET /catalogue and /catalogue/:id: published catalogue items. */
import { Type } from 'typebox';
import { CatalogueItemSchema } from '../../../domain/resources.js';
import { cataloguePages } from '../../../store/item-pages.js';
import { listCatalogue } from '../../../store/repositories/catalogue.repository.js';
import type { App } from '../../app-types.js';
import type { RouteDeps } from './route-deps.js';
import { notFound } from '../../errors.js';
import { itemPriming } from '../answer-priming.js';
import { answerBody, ItemAnswers } from '../item-answers.js';
import { Category, dataOf, Id, Limit, listOf, Offset, Platform, Search, Upc } from '../schemas.js';
import { defineRoute } from './define-route.js';
import { filteredList } from './list-handlers.js';

const CatalogueQuery = Type.Object(
  {
    search: Type.Optional(Search),
    platform: Type.Optional(Platform),
    category: Type.Optional(Category),
    upc: Type.Optional(Upc),
    limit: Type.Optional(Limit),
    offset: Type.Optional(Offset),
  },
  { additionalProperties: false },
);

const ItemParams = Type.Object({ id: Id('masterItemId') }, { additionalProperties: false });

export function registerCatalogueRoutes(app: App, deps: RouteDeps): void {
  const { dialect } = deps.store;
  const items = new ItemAnswers(deps.queries.catalogueItem, undefined, dialect === 'postgres', itemPriming('catalogue items', cataloguePages(deps.store), dialect, app.log));
  app.addHook('onClose', async () => items.close());
  defineRoute(app, {
    path: '/catalogue',
    operationId: 'catalogue',
    tag: 'Catalogue',
    summary: 'List published catalogue items',
    description: 'Published items in ascending `masterItemId`, filtered by every filter given.',
    quota: true,
    querystring: CatalogueQuery,
    response: listOf(CatalogueItemSchema),
    handler: filteredList(deps, (filters, page, version) => deps.search.listCatalogue(filters, page, version), listCatalogue),
  });

  defineRoute(app, {
    path: '/catalogue/:id',
    operationId: 'catalogueItem',
    tag: 'Catalogue',
    summary: 'One published catalogue item',
    description: '`404 not_found` when no published item has this id.',
    quota: true,
    params: ItemParams,
    itemNotFound: true,
    response: dataOf(CatalogueItemSchema),
    handler: async (request, reply) => {
      const answer = await items.answer(request.dataVersion ?? request.notifiedDataVersion, request.params.id, (item) => reply.serialize({ data: item }), reply);
      if (answer === null) throw notFound(`No published catalogue item has masterItemId ${request.params.id}.`);
      return answerBody(reply, answer);
    },
  });
}
