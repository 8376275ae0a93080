/**
 * Registers one GET endpoint (HEAD comes with it) and its OPTIONS twin, with the schemas that validate
 * it, serialize it and describe it in the OpenAPI document. The error responses come from the error
 * table, by the steps of the pipeline that can refuse this route.
 */
import type { FastifyRequest } from 'fastify';
import type { Static, TObject, TSchema } from 'typebox';
import type { Scope } from '../../domain/scopes.js';
import type { App } from '../app.js';
import { ALLOW } from '../app.js';
import type { ErrorCode } from '../errors.js';
import { ConditionalHeaders, errorResponses, NoQuery } from '../schemas.js';
import { notModifiedResponse, successResponseHeaders } from '../response-headers.js';

export interface RouteSpec<Q extends TObject, P extends TObject, R extends TSchema> {
  path: string;
  summary: string;
  description: string;
  tag: string;
  scope: Scope | null;
  quota: boolean;
  querystring?: Q;
  params?: P;
  response: R;
  /** Media type of a response other than JSON (the CSV export); `response` then describes its body. */
  produces?: string;
  /** True when the handler answers 404 for a missing item. */
  itemNotFound?: boolean;
  handler: (request: FastifyRequest<{ Querystring: Static<Q>; Params: Static<P> }>, reply: import('fastify').FastifyReply) => Promise<Static<R> | void>;
}

export function defineRoute<Q extends TObject, P extends TObject, R extends TSchema>(app: App, spec: RouteSpec<Q, P, R>): void {
  const errors: ErrorCode[] = ['bad_request', 'unauthorized', 'forbidden'];
  if (spec.scope !== null) errors.push('insufficient_scope');
  if (spec.itemNotFound) errors.push('not_found');
  errors.push('rate_limited');
  if (spec.quota) errors.push('quota_exceeded');
  errors.push('server_error', 'service_unavailable');

  const ok = spec.produces
    ? { description: 'Success', headers: successResponseHeaders, content: { [spec.produces]: { schema: spec.response } } }
    : { ...spec.response, description: 'Success', headers: successResponseHeaders };
  app.route({
    method: 'GET',
    url: spec.path,
    attachValidation: true,
    config: { meta: { scope: spec.scope, quota: spec.quota } },
    schema: {
      summary: spec.summary,
      description: spec.description,
      tags: [spec.tag],
      querystring: spec.querystring ?? NoQuery,
      ...(spec.params ? { params: spec.params } : {}),
      headers: ConditionalHeaders,
      response: { 200: ok, 304: notModifiedResponse(spec.quota), ...errorResponses(errors) },
    },
    handler: spec.handler as never,
  });
  app.route({
    method: 'OPTIONS',
    url: spec.path,
    config: { preflight: true },
    schema: { hide: true },
    handler: async (_request, reply) => {
      reply.code(204).header('allow', ALLOW);
      return reply.send();
    },
  });
}
