/**
 * Registers one GET endpoint (HEAD comes with it) and its OPTIONS twin, with the schemas that validate
 * it, serialize it and describe it in the OpenAPI document. The error responses come from the error
 * table, by the steps of the pipeline that can refuse this route.
 */
import type { FastifyRequest } from 'fastify';
import type { Static, TObject, TSchema } from 'typebox';
import { DeadlineExceededError, settleBy } from '../../../deadline.js';
import { scopeOf, type Endpoint } from '../../../domain/scopes.js';
import type { App } from '../../app-types.js';
import { ALLOW } from '../api-methods.js';
import type { ErrorCode } from '../../errors.js';
import { ConditionalHeaders, errorResponses, NoQuery } from '../schemas.js';
import { notModifiedResponse, successResponseHeaders } from '../response-headers.js';

/**
 * A body the handler serialized itself with the route's serializer (`reply.serialize`), with the JSON
 * content type set on the reply: Fastify sends such a string as it is.
 */
export type SerializedBody = string & { readonly serializedBody: true };

export interface RouteSpec<Q extends TObject, P extends TObject, R extends TSchema> {
  /** The scope it needs comes from the scope table (domain/scopes.ts), which must list the path. */
  path: Endpoint;
  /**
   * The OpenAPI `operationId`: generators name methods after it, so it is named after the endpoint, the
   * name the clients use (`catalogueItem` is the Python client's `catalogue_item()`), and never changes.
   */
  operationId: string;
  summary: string;
  description: string;
  tag: string;
  quota: boolean;
  querystring?: Q;
  params?: P;
  response: R;
  /** Media type of a response other than JSON (the CSV export); `response` then describes its body. */
  produces?: string;
  /** True when the handler answers 404 for a missing item. */
  itemNotFound?: boolean;
  /**
   * Returns the body, or a body already serialized by the route's serializer (list-answers.ts,
   * item-answers.ts), which Fastify sends as it is.
   */
  handler: (request: FastifyRequest<{ Querystring: Static<Q>; Params: Static<P> }>, reply: import('fastify').FastifyReply) => Promise<Static<R> | SerializedBody | void>;
}

export function defineRoute<Q extends TObject, P extends TObject, R extends TSchema>(app: App, spec: RouteSpec<Q, P, R>): void {
  const scope = scopeOf(spec.path);
  const errors: ErrorCode[] = ['bad_request', 'unauthorized', 'forbidden'];
  if (scope !== null) errors.push('insufficient_scope');
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
    config: { meta: { scope, quota: spec.quota } },
    schema: {
      operationId: spec.operationId,
      summary: spec.summary,
      description: spec.description,
      tags: [spec.tag],
      querystring: spec.querystring ?? NoQuery,
      ...(spec.params ? { params: spec.params } : {}),
      headers: ConditionalHeaders,
      response: { 200: ok, 304: notModifiedResponse(spec.quota), ...errorResponses(errors) },
    },
    handler: (async (request: Parameters<typeof spec.handler>[0], reply: import('fastify').FastifyReply) => {
      // The handler's queries get what is left of the request's deadline (onRequest sets it), then 503.
      try {
        return await settleBy(request.deadline, spec.handler(request, reply), 'the handler');
      } catch (error) {
        // A handler that sends a stream settles when the stream ends: an export whose headers went out in
        // time and that is still streaming at the deadline is not late (reply.sent waits for the end).
        if (error instanceof DeadlineExceededError && reply.raw.headersSent) return undefined;
        throw error;
      }
    }) as never,
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
