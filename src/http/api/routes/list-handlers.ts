/** The handlers of the paged lists: the page a request asks for, and where each kind of list is read from. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import type { FilteredList } from '../../../store/repositories/catalogue.repository.js';
import type { Page, PageRequest } from '../../../store/repositories/page.js';
import type { Database } from '../../../store/schema.js';
import type { SerializedBody } from './define-route.js';
import type { RouteDeps } from './route-deps.js';
import { strongEtag } from '../conditional.js';
import { Limit, Offset } from '../schemas.js';

/** What Fastify sets for a serialized JSON answer. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The page of a request that gives neither limit nor offset: the defaults the two schemas document. */
const PageSchema = Type.Object({ limit: Limit, offset: Offset });
const DEFAULT_PAGE: PageRequest = Value.Parse(PageSchema, Value.Default(PageSchema, {}));

interface PageParams {
  limit?: number;
  offset?: number;
}

export function pageRequest(query: PageParams): PageRequest {
  return { limit: query.limit ?? DEFAULT_PAGE.limit, offset: query.offset ?? DEFAULT_PAGE.offset };
}

/** A list of the key owner's own rows: the repository reads it for the key's account. */
export function ownerList<T>(deps: RouteDeps, list: (db: Kysely<Database>, accountId: number, page: PageRequest) => Promise<Page<T>>) {
  return async (request: Pick<FastifyRequest, 'principal'> & { query: PageParams }): Promise<Page<T>> =>
    list(deps.store.db, request.principal!.accountId, pageRequest(request.query));
}

/**
 * A public list under filters (catalogue, prices): from the search index while it can answer, otherwise a
 * scan of the store, run through the scan limiter, with its total kept in the read cache. The answer is
 * serialized here, with its ETag, and kept per data version (list-answers.ts): the same page asked again
 * is sent as it was.
 */
export function filteredList<F extends object, T>(
  deps: RouteDeps,
  fromIndex: (filters: F, page: PageRequest, dataVersion: number) => Promise<Page<T> | null>,
  fromStore: FilteredList<F, T>,
) {
  return async (
    request: { query: F & PageParams; routeOptions: { url?: string | undefined }; dataVersion: number | null },
    reply: FastifyReply,
  ): Promise<SerializedBody> => {
    const { limit, offset, ...filters } = request.query;
    const page = pageRequest({ limit, offset });
    // The version the key check read (one round trip with it on PostgreSQL); rows are read after it.
    const version = request.dataVersion ?? (await deps.queries.dataVersion());
    const key = `${request.routeOptions.url ?? ''} ${page.limit} ${page.offset} ${JSON.stringify(filters)}`;
    const answer = await deps.answers.answer(version, key, async () => {
      const found =
        (await fromIndex(filters as F, page, version)) ??
        (await deps.scans.run(() => fromStore(deps.store.db, deps.store.dialect, filters as F, page, (key, count) => deps.cache.get(key, count))));
      // The route's own serializer, as Fastify would run it: the same bytes, so the same ETag (conditional.ts).
      const body = reply.serialize(found) as SerializedBody;
      return { body, etag: strongEtag(body) };
    });
    // A string with a JSON content type is sent as it is, and the pipeline's onSend keeps an ETag already set.
    reply.header('etag', answer.etag).type(JSON_CONTENT_TYPE);
    return answer.body;
  };
}
