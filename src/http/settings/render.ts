/** Turns a view (a preact element) into the HTML document the reply carries. Escaping is the renderer's. */
import type { FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';

export function renderDocument(view: VNode): string {
  return `<!DOCTYPE html>\n${renderToString(view)}`;
}

export function sendPage(reply: FastifyReply, status: number, view: VNode): FastifyReply {
  // A page whose queries finished after the request's deadline: its 503 went out already.
  if (reply.sent) return reply;
  return reply.code(status).type('text/html; charset=utf-8').send(renderDocument(view));
}
