/**
 * Schemas shared by every route: parameters, the list envelope, the error body. One TypeBox schema per
 * thing serves validation (src/http/api/param-validator.ts), serialization and the OpenAPI document.
 */
import { Type, type TSchema } from 'typebox';
import { ERROR_DESCRIPTION, ERROR_STATUS, type ErrorCode } from '../errors.js';
import { commonResponseHeaders, rateLimitResponseHeaders, retryAfterHeader } from './response-headers.js';
import { TERMS_TEXT_RULE, TEXT_RULE } from './param-validator.js';

function errorHeaders(status: number): Record<string, unknown> {
  if (status === 429) return { ...rateLimitResponseHeaders, ...retryAfterHeader };
  if (status === 503) return { ...commonResponseHeaders, ...retryAfterHeader };
  return commonResponseHeaders;
}

export const MAX_ID = Number.MAX_SAFE_INTEGER;

export { Money, NullableMoney, NullableString, NullableTimestamp, Timestamp } from '../../domain/resources.js';

export const Id = (description: string) =>
  Type.Integer({ minimum: 1, maximum: MAX_ID, description: `${description}: decimal digits only, 1..${MAX_ID}` });

export const Limit = Type.Integer({
  minimum: 1,
  maximum: 100,
  default: 50,
  description: 'Page size, 1..100 (decimal digits only).',
});
export const Offset = Type.Integer({
  minimum: 0,
  maximum: 1_000_000_000,
  default: 0,
  description: 'Rows to skip, 0..1000000000 (decimal digits only). Past the end: an empty page.',
});
export const Search = Type.String({
  minLength: 1,
  maxLength: 200,
  // Unicode's White_Space, as search-text.ts splits terms (OpenAPI 3.1 patterns are ECMA-262 with the u flag).
  pattern: '\\P{White_Space}',
  description:
    'Split on white space (space, tab, line breaks and the other Unicode white space) into terms; an item matches when ' +
    `its name contains every term, ignoring case and accents. %, _ and \\ are literal. Text: ${TERMS_TEXT_RULE}.`,
  'x-invalid': "Query parameter 'search' must be 1 to 200 characters, at least one of them not white space.",
  'x-white-space': true,
});
export const Platform = Type.String({ minLength: 1, description: `Case-insensitive equality with the platform. Text only: ${TEXT_RULE}.` });
export const Category = Type.String({ minLength: 1, description: `Case-insensitive equality with the category. Text only: ${TEXT_RULE}.` });
export const Upc = Type.String({
  pattern: '^[0-9]{6,14}$',
  description: '6..14 ASCII digits, exact equality with the UPC of the latest price record.',
  'x-invalid': "Query parameter 'upc' must be 6 to 14 ASCII digits.",
});

export const PageQuery = Type.Object({ limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
export const NoQuery = Type.Object({}, { additionalProperties: false });

export const Pagination = Type.Object(
  {
    total: Type.Integer(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    hasMore: Type.Boolean({ description: 'offset + data.length < total' }),
  },
  { additionalProperties: false },
);

export const listOf = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), pagination: Pagination }, { additionalProperties: false });

export const dataOf = <T extends TSchema>(item: T) => Type.Object({ data: item }, { additionalProperties: false });

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'A code from the error table' }),
    message: Type.String({ description: 'Human-readable; never a stack trace, SQL, a path or a key' }),
  },
  { additionalProperties: false, $id: 'ErrorBody' },
);

/** Response schemas for the error codes a route can return, grouped by status, for Fastify and OpenAPI. */
export function errorResponses(codes: readonly ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const out: Record<number, TSchema> = {};
  for (const [status, list] of byStatus) {
    out[status] = Type.Object(
      {
        // One code is a literal: a union of one is an `anyOf` of one in the document, which linters flag.
        error: list.length === 1 ? Type.Literal(list[0]!) : Type.Union(list.map((c) => Type.Literal(c))),
        message: Type.String(),
      },
      {
        additionalProperties: false,
        description: list.map((c) => `\`${c}\`: ${ERROR_DESCRIPTION[c]}`).join(' '),
        headers: errorHeaders(status),
      },
    );
  }
  return out;
}

/** Request headers a route reads beyond the key: If-None-Match, for conditional requests. */
export const ConditionalHeaders = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({
      description:
        'One or more entity tags from earlier answers (or `*`). When one names the current `ETag`, the answer is `304 Not Modified` with no body, and the quota count is given back.',
    }),
  ),
});
