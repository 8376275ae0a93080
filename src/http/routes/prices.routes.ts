/** GET /prices, /prices/:masterItemId and the streamed CSV export /prices/export.csv. */
import { Readable } from 'node:stream';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Type, type Static } from 'typebox';
import { csvLine } from '../../csv/csv.js';
import { listPrices, type PriceFilters, type PriceRow } from '../../store/repositories/price.repository.js';
import { exportPriceBatches } from '../../store/repositories/price-export.js';
import type { App, RouteDeps } from '../app.js';
import { notFound } from '../errors.js';
import { dataOf, Id, Limit, listOf, NullableMoney, Offset, Platform, Search, Timestamp, Upc } from '../schemas.js';
import { defineRoute } from './define-route.js';

export const PriceRowSchema = Type.Object(
  {
    masterItemId: Type.Integer(),
    name: Type.String(),
    slug: Type.String(),
    platform: Type.String(),
    category: Type.String(),
    upc: Type.String({ description: 'Barcode digits' }),
    loose: NullableMoney,
    cib: NullableMoney,
    new: NullableMoney,
    boxOnly: NullableMoney,
    manualOnly: NullableMoney,
    scrapeDate: Timestamp,
  },
  { additionalProperties: false },
);
export type PriceRowBody = Static<typeof PriceRowSchema>;

const filterProperties = { search: Type.Optional(Search), platform: Type.Optional(Platform), upc: Type.Optional(Upc) };
const PricesQuery = Type.Object(
  { ...filterProperties, limit: Type.Optional(Limit), offset: Type.Optional(Offset) },
  { additionalProperties: false },
);
const ExportQuery = Type.Object(filterProperties, { additionalProperties: false });
const PriceParams = Type.Object({ masterItemId: Id('masterItemId') }, { additionalProperties: false });

export const CSV_COLUMNS = [
  'masterItemId', 'name', 'slug', 'platform', 'category', 'upc',
  'loose', 'cib', 'new', 'boxOnly', 'manualOnly', 'scrapeDate',
] as const satisfies ReadonlyArray<keyof PriceRow>;

/** The export as CSV text chunks: a header, then one chunk per batch, yielding to other requests between. */
async function* csvChunks(batches: AsyncGenerator<PriceRow[]>): AsyncGenerator<string> {
  yield csvLine(CSV_COLUMNS);
  for await (const batch of batches) {
    let chunk = '';
    for (const row of batch) chunk += csvLine(CSV_COLUMNS.map((c) => row[c]));
    yield chunk;
    await yieldToEventLoop();
  }
}

export function registerPriceRoutes(app: App, deps: RouteDeps): void {
  defineRoute(app, {
    path: '/prices',
    tag: 'Prices',
    summary: 'List current prices',
    description:
      'One row per published item that has a price record: the latest by `scrapeDate`. Ascending `masterItemId`. ' +
      'Prices are US dollars; `null` where unknown.',
    scope: 'prices:read',
    quota: true,
    querystring: PricesQuery,
    response: listOf(PriceRowSchema),
    handler: async (request) => {
      const { limit = 50, offset = 0, ...filters } = request.query;
      return listPrices(deps.store.db, deps.store.dialect, filters, { limit, offset });
    },
  });

  defineRoute(app, {
    path: '/prices/export.csv',
    tag: 'Prices',
    summary: 'Export current prices as CSV',
    description:
      'Every row of `/prices` for the same filters, streamed as RFC 4180 CSV (CRLF line ends, a header row, fields ' +
      'quoted when they hold `,` `"` CR or LF, quotes doubled, `null` as an empty field). Counts as one request.',
    scope: 'export',
    quota: true,
    querystring: ExportQuery,
    produces: 'text/csv',
    response: Type.String({
      description: 'Columns: masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate',
    }),
    handler: async (request, reply) => {
      reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="prices.csv"');
      // HEAD must carry the GET's headers (decisions.md section 1). The GET streams, with no length known up
      // front; sending '' here made Fastify announce `content-length: 0`, i.e. an empty file. An empty stream
      // leaves the length unannounced, as on the GET, and runs no export query.
      if (request.method === 'HEAD') return reply.send(Readable.from([]));
      const filters: PriceFilters = request.query;
      const stream = Readable.from(csvChunks(exportPriceBatches(deps.store, filters)), { objectMode: false });
      return reply.send(stream);
    },
  });

  defineRoute(app, {
    path: '/prices/:masterItemId',
    tag: 'Prices',
    summary: 'Current price of one item',
    description: '`404 not_found` when the item is not published or has no price record.',
    scope: 'prices:read',
    quota: true,
    params: PriceParams,
    itemNotFound: true,
    response: dataOf(PriceRowSchema),
    handler: async (request) => {
      const row = await deps.queries.price(request.params.masterItemId);
      if (!row) throw notFound(`No current price for masterItemId ${request.params.masterItemId}.`);
      return { data: row };
    },
  });
}
