/** The handlers of the paged lists: the page a request asks for, and where each kind of list is read from. */
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import type { FilteredList } from '../../../store/repositories/catalogue.repository.js';
import type { Page, PageRequest } from '../../../store/repositories/page.js';
import type { Database } from '../../../store/schema.js';
import type { RouteDeps } from './route-deps.js';
import { Limit, Offset } from '../schemas.js';

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
 * scan of the store, run through the scan limiter, with its total kept in the read cache.
 */
export function filteredList<F extends object, T>(
  deps: RouteDeps,
  fromIndex: (filters: F, page: PageRequest) => Promise<Page<T> | null>,
  fromStore: FilteredList<F, T>,
) {
  return async (request: { query: F & PageParams }): Promise<Page<T>> => {
    const { limit, offset, ...filters } = request.query;
    const page = pageRequest({ limit, offset });
    return (
      (await fromIndex(filters as F, page)) ??
      deps.scans.run(() => fromStore(deps.store.db, deps.store.dialect, filters as F, page, (key, count) => deps.cache.get(key, count)))
    );
  };
}
