/**
 * A tiny HTTP server on 127.0.0.1 that misbehaves the way a broken server or proxy does: absurd
 * `Retry-After` values, the request's key echoed back, bytes trickled one a second. The first segment of
 * the path chooses what it does, so one server serves every case: `baseUrl: `${origin}/<mode>``.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A key shaped as the service makes them; the tests check it never appears in what the client throws. */
export const KEY = `shelf_live_${'Zq9'.repeat(14)}xAb3D5f`;
export const SECRET = KEY.slice('shelf_live_'.length);

function head(status: string, headers: Record<string, string>, length?: number): string {
  const lines = [`HTTP/1.1 ${status}`, 'connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (length !== undefined) lines.push(`content-length: ${length}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function whole(status: string, body: string, headers: Record<string, string> = {}): string {
  return head(status, { 'content-type': 'application/json', ...headers }, Buffer.byteLength(body)) + body;
}

function error(status: string, code: string, message: string, headers: Record<string, string> = {}): string {
  return whole(status, JSON.stringify({ error: code, message }), headers);
}

async function trickle(socket: Socket, data: string): Promise<void> {
  for (const byte of data) {
    if (socket.destroyed) return;
    socket.write(byte);
    await sleep(1000);
  }
}

async function answer(mode: string, authorization: string, socket: Socket): Promise<void> {
  const secretEcho = authorization.replace('Bearer shelf_live_', '');
  switch (mode) {
    case 'huge-retry-after':
      return void socket.end(error('503 Service Unavailable', 'service_unavailable', 'down', { 'retry-after': '99999999' }));
    case 'date-retry-after':
      return void socket.end(error('429 Too Many Requests', 'rate_limited', 'slow down', { 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }));
    case 'retry-after-2':
      return void socket.end(error('503 Service Unavailable', 'service_unavailable', 'down', { 'retry-after': '2' }));
    case 'echo':
      // A debugging proxy: the Authorization header in the message and the request id, the bare secret as the code.
      return void socket.end(
        error('503 Service Unavailable', secretEcho, `refused ${authorization} (secret ${secretEcho})`, {
          'x-request-id': authorization,
          'retry-after': '0',
        }),
      );
    case 'echo-2xx': {
      const page = `<pre>${authorization}</pre>`;
      return void socket.end(head('200 OK', { 'content-type': 'application/json', 'x-request-id': secretEcho }, page.length) + page);
    }
    case 'echo-csv': {
      const csv = `masterItemId,${authorization}\r\n1,2\r\n`;
      return void socket.end(head('200 OK', { 'content-type': 'text/csv' }, csv.length) + csv);
    }
    case 'trickle-body': {
      // Digits only: neither the JSON nor the CSV reader can fail on it before the timeout does.
      const body = '1'.repeat(40);
      socket.write(head('200 OK', { 'content-type': 'application/json' }, body.length));
      return trickle(socket, body);
    }
    case 'trickle-headers':
      return trickle(socket, head('200 OK', { 'x-padding': 'p'.repeat(40) }, 2) + '{}');
    default:
      return void socket.end(error('404 Not Found', 'not_found', `no mode ${mode}`));
  }
}

export interface MisbehavingServer {
  origin: string;
  /** Requests received, by mode. */
  requests: Map<string, number>;
  close(): Promise<void>;
}

export async function startMisbehavingServer(): Promise<MisbehavingServer> {
  const requests = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined); // the client gave up: what the timeout tests want
    let received = '';
    const onData = (chunk: Buffer): void => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.off('data', onData);
      const [requestLine = '', ...lines] = received.slice(0, end).split('\r\n');
      const path = requestLine.split(' ')[1] ?? '/';
      const mode = path.split('/')[1] ?? '';
      const authorization = lines.find((l) => l.toLowerCase().startsWith('authorization:'))?.slice('authorization:'.length).trim() ?? '';
      requests.set(mode, (requests.get(mode) ?? 0) + 1);
      void answer(mode, authorization, socket);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    origin: `http://127.0.0.1:${address.port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
