/** Response headers as documented in the OpenAPI document. */

/** On every response, errors included. */
export const commonResponseHeaders = {
  'X-Request-Id': { type: 'string', description: 'Identifier of this request, for support.' },
  'Cache-Control': { type: 'string', description: 'Always `private, no-store`.' },
} as const;

/** On metered responses. X-RateLimit-* are absent on `rate_limited` answers. */
export const rateLimitResponseHeaders = {
  ...commonResponseHeaders,
  'X-RateLimit-Limit': { type: 'integer', description: 'Monthly quota of the account (requests).' },
  'X-RateLimit-Remaining': { type: 'integer', description: 'Requests left this month, after this one.' },
  'X-RateLimit-Reset': { type: 'integer', description: 'Unix time (seconds) when the quota resets: 00:00:00.000 UTC on the 1st of next month.' },
  'RateLimit-Policy': {
    type: 'string',
    description: 'IETF draft field: `"burst";q=<perMinute>;w=60, "quota";q=<monthly>;w=<seconds of this month>`.',
  },
  RateLimit: {
    type: 'string',
    description: 'IETF draft field: `"burst";r=<left in the window>;t=<seconds until a slot frees>, "quota";r=<remaining>;t=<seconds until the reset>`.',
  },
} as const;

export const retryAfterHeader = {
  'Retry-After': { type: 'integer', description: 'Whole seconds to wait before retrying, at least 1.' },
} as const;

/** On every 200: the strong entity tag that If-None-Match may name. */
export const successResponseHeaders = {
  ...rateLimitResponseHeaders,
  ETag: {
    type: 'string',
    description:
      'Strong entity tag of this answer. Send it back in `If-None-Match` to get `304 Not Modified` while the answer is unchanged.',
  },
} as const;

/** The 304 answer to a request whose If-None-Match names the current tag. */
export function notModifiedResponse(quota: boolean) {
  return {
    // `type: 'null'` is how @fastify/swagger documents a response without content.
    type: 'null',
    description:
      'Not Modified: `If-None-Match` named the current `ETag`. No body. Counts toward the burst limit' +
      (quota ? ' but not against the monthly quota (the count is given back).' : '.'),
    headers: { ...rateLimitResponseHeaders, ETag: successResponseHeaders.ETag },
  };
}
