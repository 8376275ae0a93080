/**
 * A TCP proxy in front of a Redis that can lose one reply on purpose: the command reaches Redis and runs,
 * and the connection is cut as its reply comes back, as when Redis dies (or the network fails) between
 * doing the work and the reply arriving. Deterministic where a SIGKILL under load is a matter of luck.
 */
import { createServer, connect, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { startPrivateRedis } from './private-services.js';

export interface ReplyDroppingProxy {
  url: string;
  /** The next bytes Redis sends on any connection are not forwarded: both sides of it are closed instead. */
  dropNextReply(): void;
  /** True once the reply asked for by dropNextReply was dropped. */
  dropped(): boolean;
  close(): Promise<void>;
}

export async function startReplyDroppingProxy(redisUrl: string): Promise<ReplyDroppingProxy> {
  const target = new URL(redisUrl);
  let dropNext = false;
  let didDrop = false;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    track(client);
    track(upstream);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (dropNext) {
        dropNext = false;
        didDrop = true;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    dropNextReply() {
      dropNext = true;
      didDrop = false;
    },
    dropped: () => didDrop,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A Redis meter (keys under `prefix`) on a private Redis, reached through a proxy that can lose one reply on purpose. */
export async function meterBehindProxy(t: TestContext, prefix: string): Promise<{ meter: RedisMeter; proxy: ReplyDroppingProxy }> {
  const redis = await startPrivateRedis();
  const proxy = await startReplyDroppingProxy(redis.url);
  const meter = new RedisMeter(proxy.url, { prefix });
  t.after(async () => {
    await meter.close();
    await proxy.close();
    await redis.destroy();
  });
  await meter.ready();
  return { meter, proxy };
}
