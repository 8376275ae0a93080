/**
 * Answers for requests that never reach Fastify's routing: those Node's HTTP parser refuses (a malformed
 * request line, Content-Length with Transfer-Encoding, bare LF line ends, headers too large or too slow),
 * and CONNECT, which Node hands to a 'connect' listener instead of a request handler. Fastify's defaults
 * answer the first in a shape of their own without a request id and ignore the second; here each gets the
 * contract's error body with `X-Request-Id`, `Cache-Control` and `Connection: close`, then the connection
 * is closed (after a parse error the rest of the bytes cannot be trusted to frame another request).
 */
import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ConnectionError, FastifyBaseLogger } from 'fastify';
import { ApiError, badRequest, echoed, errorBody } from './errors.js';

/** Who logs, and the app's Allow header (passed in to keep this module free of app.ts). */
interface Context {
  allow: string;
  log: FastifyBaseLogger;
}

/** A request line's method (an HTTP token) and target: a method this server does not implement (405), not noise (400). */
const METHOD_AND_TARGET = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) [^ \r\n]+/;
const VERSIONS = [' HTTP/1.1\r\n', ' HTTP/1.0\r\n', ' HTTP/1.1\n', ' HTTP/1.0\n'];

/**
 * The answer for a request line Node refused at its method. Node stops at the method's first byte and gives
 * the packet it was parsing, which may end anywhere (the request arrives in pieces), so a line cut short
 * after its target is taken as a request line too. It is looked at up to the header limit, as a GET's line
 * is: one longer than that is 431 as a GET's would be, never 400 for its length alone.
 */
function unknownMethodAnswer(packet: Buffer, allow: string): ApiError {
  const text = packet.subarray(0, maxHeaderSize + 1).toString('latin1');
  const found = METHOD_AND_TARGET.exec(text);
  if (found === null) return badRequest('The request is malformed.');
  const rest = text.slice(found[0].length);
  const complete = VERSIONS.some((version) => rest.startsWith(version));
  const cutShort = !complete && rest.length < VERSIONS[0]!.length && VERSIONS.some((version) => version.startsWith(rest));
  if (!complete && !cutShort) return badRequest('The request is malformed.');
  if (found[0].length > maxHeaderSize) return headersTooLarge();
  return methodNotAllowed(echoed(found[1] as string), allow);
}

function headersTooLarge(): ApiError {
  return new ApiError('headers_too_large', 'The request line and headers are too large (the limit is 16 KB).');
}

function methodNotAllowed(method: string, allow: string): ApiError {
  return new ApiError('method_not_allowed', `Method ${method} is not allowed; use GET, HEAD or OPTIONS.`, { allow });
}

/** The contract's answer for an error Node's parser raised on this connection. */
function answerFor(error: ConnectionError, allow: string): ApiError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', 'The request did not arrive in time; send the whole request at once.');
    case 'HPE_HEADER_OVERFLOW':
      return headersTooLarge();
    case 'HPE_INVALID_METHOD': {
      // Node gives the bytes it was parsing as a Buffer (Fastify's type says otherwise).
      const packet: unknown = error.rawPacket;
      return Buffer.isBuffer(packet) ? unknownMethodAnswer(packet, allow) : badRequest('The request is malformed.');
    }
    default:
      return badRequest('The request is malformed.');
  }
}

/** A complete HTTP/1.1 response that closes the connection, as raw bytes. */
export function rawErrorResponse(apiError: ApiError, requestId: string): string {
  const body = JSON.stringify(errorBody(apiError));
  const headers: Array<[string, string | number]> = [
    ['Content-Type', 'application/json; charset=utf-8'],
    ['Content-Length', Buffer.byteLength(body)],
    ['X-Request-Id', requestId],
    ['Cache-Control', 'private, no-store'],
    ['Connection', 'close'],
    ...Object.entries(apiError.headers),
  ];
  const head = [`HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status] ?? ''}`, ...headers.map(([n, v]) => `${n}: ${v}`)];
  return `${head.join('\r\n')}\r\n\r\n${body}`;
}

function answerAndClose(socket: Duplex, apiError: ApiError, log: FastifyBaseLogger, detail: Record<string, unknown>): void {
  const requestId = randomUUID();
  // One line per answer, like every request: the id the client got, the status, what Node reported.
  log.info({ reqId: requestId, status: apiError.status, ...detail }, 'connection error');
  socket.end(rawErrorResponse(apiError, requestId));
  // Do not wait for the client to close its side: a client that never reads must not hold the socket.
  socket.once('finish', () => socket.destroy());
}

/** Fastify's `clientErrorHandler` (Fastify calls it with the instance as `this`, for its logger). */
export function connectionErrorHandler(allow: string) {
  return function (this: { log: FastifyBaseLogger }, error: ConnectionError, socket: Duplex): void {
    // A reset connection is gone; and when a response has begun on it, no second one can be written.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // Node's internal field: the response under way on this socket, if any (its own handler checks it too).
    const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || current?.headersSent === true) {
      socket.destroy();
      return;
    }
    answerAndClose(socket, answerFor(error, allow), this.log, { code: error.code ?? null });
  };
}

/** The 'connect' listener: CONNECT is a method like any other this API does not serve (405). */
export function connectHandler(context: Context) {
  return (_request: IncomingMessage, socket: Duplex): void => {
    answerAndClose(socket, methodNotAllowed('CONNECT', context.allow), context.log, { method: 'CONNECT' });
  };
}

/**
 * What is wrong with the request's Host header (RFC 9112 section 3.2: an HTTP/1.1 request carries exactly
 * one), or null. Node's own check answers an empty 400 and misses a second Host, which it drops silently.
 */
export function hostHeaderProblem(request: IncomingMessage): string | null {
  let hosts = 0;
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === 'host') hosts++;
  if (hosts > 1) return 'The Host header is given more than once.';
  if (hosts === 0 && request.httpVersion === '1.1') return 'An HTTP/1.1 request needs a Host header.';
  return null;
}
