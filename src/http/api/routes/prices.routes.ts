/** GET /prices, /prices/:masterItemId and the streamed CSV export /prices/export.csv. */
import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { EXPORT_COLUMNS } from '../../../domain/export-columns.js';
import { PriceRowSchema } from '../../../domain/resources.js';
import { csvChunks } from '../../../csv/csv-chunks.js';
import { pricePages } from '../../../store/item-pages.js';
import { listPrices, type PriceFilters } from '../../../store/repositories/price.repository.js';
import type { App } from '../../app-types.js';
import type { RouteDeps } from './route-deps.js';
import { exportEtag, ifNoneMatchMatches } from '../conditional.js';
import { notFound } from '../../errors.js';
import { itemPriming } from '../answer-priming.js';
import { answerBody, ItemAnswers } from '../item-answers.js';
import { dataOf, Id, Limit, listOf, Offset, Platform, Search, Upc } from '../schemas.js';
import { defineRoute } from './define-route.js';
import { filteredList } from './list-handlers.js';

const filterProperties = { search: Type.Optional(Search), platform: Type.Optional(Platform), upc: Type.Optional(Upc) };
const PricesQuery = Type.Object(
  { ...filterProperties, limit: Type.Optional(Limit), offset: Type.Optional(Offset) },
  { additionalProperties: false },
);
const ExportQuery = Type.Object(filterProperties, { additionalProperties: false });
const PriceParams = Type.Object({ masterItemId: Id('masterItemId') }, { additionalProperties: false });

/** What the export may hold ready while the socket drains, so that formatting and sending overlap. */
const EXPORT_BUFFER_BYTES = 1024 * 1024;

export function registerPriceRoutes(app: App, deps: RouteDeps): void {
  const { dialect } = deps.store;
  const prices = new ItemAnswers(deps.queries.price, undefined, dialect === 'postgres', itemPriming('prices', pricePages(deps.store), dialect, app.log));
  app.addHook('onClose', async () => prices.close());
  defineRoute(app, {
    path: '/prices',
    operationId: 'prices',
    tag: 'Prices',
    summary: 'List current prices',
    description:
      'One row per published item that has a price record: the latest by `scrapeDate`. Ascending `masterItemId`. ' +
      'Prices are US dollars; `null` where unknown.',
    quota: true,
    querystring: PricesQuery,
    response: listOf(PriceRowSchema),
    handler: filteredList(deps, (filters, page, version) => deps.search.listPrices(filters, page, version), listPrices),
  });

  defineRoute(app, {
    path: '/prices/export.csv',
    operationId: 'exportPrices',
    tag: 'Prices',
    summary: 'Export current prices as CSV',
    description:
      'Every row of `/prices` for the same filters, streamed as RFC 4180 CSV (CRLF line ends, a header row, fields ' +
      'quoted when they hold `,` `"` CR or LF, quotes doubled, `null` as an empty field). Counts as one request.',
    quota: true,
    querystring: ExportQuery,
    produces: 'text/csv',
    response: Type.String({
      description: `Columns: ${EXPORT_COLUMNS.join(',')}`,
    }),
    handler: async (request, reply) => {
      reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="prices.csv"');
      const filters: PriceFilters = request.query;
      // The tag is known before the first byte: the data version and the filters decide the file.
      const version = await deps.queries.dataVersion();
      const etag = exportEtag(version, filters);
      reply.header('etag', etag);
      // HEAD, and a request the app's onSend hook will answer 304, run no export query. HEAD must carry the
      // GET's headers (docs/contract.md, "Request pipeline"): the GET streams with no length known up front, and sending ''
      // made Fastify announce `content-length: 0`, i.e. an empty file; an empty stream leaves it unannounced.
      if (request.method === 'HEAD' || ifNoneMatchMatches(request.headers['if-none-match'], etag)) return reply.send(Readable.from([]));
      // The unfiltered guide from its file when this version's is written; otherwise from the store. The
      // handle is opened last: nothing can fail between it and the reply, which closes it.
      if (Object.values(filters).every((value) => value === undefined)) {
        const file = await deps.guide.open(version);
        if (file !== null) return reply.send(file.createReadStream({ highWaterMark: EXPORT_BUFFER_BYTES }));
      } else if (deps.guide.rowsOf(version) !== null) {
        // Filtered: the matching rows copied from the same file, when both it and the search index are at
        // this version; otherwise from the store.
        const runs = await deps.search.pricedRuns(filters, version);
        const fromFile = runs === null ? null : await deps.guide.filtered(version, runs);
        if (fromFile !== null) {
          const stream = Readable.from(fromFile.chunks, { objectMode: false, highWaterMark: EXPORT_BUFFER_BYTES });
          stream.once('close', () => void fromFile.close().catch(() => undefined));
          return reply.send(stream);
        }
      }
      const stream = Readable.from(csvChunks(EXPORT_COLUMNS, deps.search.exportBatches(filters)), {
        objectMode: false,
        highWaterMark: EXPORT_BUFFER_BYTES,
      });
      return reply.send(stream);
    },
  });

  defineRoute(app, {
    path: '/prices/:masterItemId',
    operationId: 'price',
    tag: 'Prices',
    summary: 'Current price of one item',
    description: '`404 not_found` when the item is not published or has no price record.',
    quota: true,
    params: PriceParams,
    itemNotFound: true,
    response: dataOf(PriceRowSchema),
    handler: async (request, reply) => {
      const { masterItemId } = request.params;
      const answer = await prices.answer(request.dataVersion ?? request.notifiedDataVersion, masterItemId, (row) => reply.serialize({ data: row }), reply);
      if (answer === null) throw notFound(`No current price for masterItemId ${masterItemId}.`);
      return answerBody(reply, answer);
    },
  });
}
