/**
 * Types derived from the generated `schema.ts`, so that every name below follows openapi.json when it
 * is regenerated: nothing here restates a field of the API by hand.
 */
import type { paths } from './schema.js';

/** Every path of the document lives under this prefix; the client adds it to the base URL once. */
export const API_PREFIX = '/developer/v1';

/**
 * The document's paths without the `/developer/v1` prefix: callers write `/catalogue`, the same path
 * the README and the curl recipes use.
 */
export type ShelfPaths = {
  [K in keyof paths as K extends `${typeof API_PREFIX}${infer Rest}` ? Rest : never]: paths[K];
};

export type ShelfPath = keyof ShelfPaths;

type Operation<P extends ShelfPath> = ShelfPaths[P]['get'];
type Responses<P extends ShelfPath> = Operation<P>['responses'];

type JsonBody<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** The JSON body of a path's `200`. */
export type ResponseOf<P extends ShelfPath> = JsonBody<Responses<P>[200]>;

/** Paths answering JSON (every path but the CSV export). */
export type JsonPath = { [P in ShelfPath]: [ResponseOf<P>] extends [never] ? never : P }[ShelfPath];

/** Paths answering `{ data: [...], pagination }`: the ones `pages()` and `paginate()` walk. */
export type ListPath = {
  [P in JsonPath]: ResponseOf<P> extends { data: readonly unknown[]; pagination: { hasMore: boolean } } ? P : never;
}[JsonPath];

/** One element of a list path's `data`. */
export type ItemOf<P extends ListPath> = ResponseOf<P> extends { data: ReadonlyArray<infer I> } ? I : never;

type Parameters<P extends ShelfPath> = Operation<P>['parameters'];

/** Query parameters of a path (`never` when it takes none). */
export type QueryOf<P extends ShelfPath> = Parameters<P> extends { query?: infer Q } ? NonNullable<Q> : never;

/** Path parameters of a path such as `/catalogue/{id}` (`never` when it has none). */
export type PathParamsOf<P extends ShelfPath> = Parameters<P> extends { path: infer X } ? X : never;

/** One row of `/prices`, also what `exportPrices()` yields from the CSV export. */
export type PriceRow = ItemOf<'/prices'>;

type ErrorStatus<R> = { [S in keyof R]: S extends 200 | 204 | 304 ? never : R[S] }[keyof R];
type ErrorBodies = { [P in ShelfPath]: JsonBody<ErrorStatus<Responses<P>>> }[ShelfPath];

/** Every `error` code the document declares (`bad_request`, `rate_limited`, `quota_exceeded`, ...). */
export type ShelfErrorCode = ErrorBodies extends { error: infer C } ? C : never;
