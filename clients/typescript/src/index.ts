/**
 * @shelfapi/client: a typed client for the shelfapi Developer API. Types come from the generated
 * `schema.ts` (openapi.json); calls go through openapi-fetch.
 */
export { createShelfClient, type GetOptions, type RequestOptions, type ShelfClient, type ShelfClientOptions } from './client.js';
export { CsvSyntaxError, csvRecords, priceRows, PRICE_CSV_COLUMNS } from './csv.js';
export {
  parseRetryAfter,
  RETRY_AFTER_CEILING,
  ShelfApiError,
  ShelfConnectionError,
  ShelfError,
  ShelfTimeoutError,
  type ShelfApiErrorCode,
  type ShelfApiErrorInit,
} from './errors.js';
export { REDACTED } from './redact.js';
export type { RetryEvent } from './retry.js';
export type { paths, components } from './schema.js';
export {
  API_PREFIX,
  type ItemOf,
  type JsonPath,
  type ListPath,
  type PathParamsOf,
  type PriceRow,
  type QueryOf,
  type ResponseOf,
  type ShelfErrorCode,
  type ShelfPath,
  type ShelfPaths,
} from './types.js';
