/**
 * The baseline of every benchmark: a raw node:http server answering a fixed JSON body the size of a
 * catalogue item. Whatever shelfapi does, it cannot beat this on the same machine.
 *
 * BASELINE_MODE sets two floors between the baseline and shelfapi (docs/performance.md, "What to expect"), each
 * answering an item GET's bytes (BODY_BYTES, default 616) with the ten headers shelfapi sends on it
 * (a fresh request id, the rate-limit fields built from numbers, an ETag), and doing nothing else:
 *   headers  raw node:http: what HTTP costs for shelfapi's response shape, before any work of its own;
 *   fastify  the same from one Fastify route with its own router, hooks and reply.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import Fastify from 'fastify';

const port = Number(process.env.PORT ?? 18090);
const mode = process.env.BASELINE_MODE ?? 'plain';
const size = Number(process.env.BODY_BYTES ?? (mode === 'plain' ? 520 : 616));
const item = {
  data: {
    masterItemId: 123456,
    name: 'Super Mario 64',
    slug: 'super-mario-64-nintendo-64-123456',
    category: 'game',
    platform: 'Nintendo 64',
    description: '',
  },
};
item.data.description = 'x'.repeat(Math.max(0, size - JSON.stringify(item).length));
const body = JSON.stringify(item);
const listening = () => process.stdout.write(`baseline (${mode}) listening on ${port}\n`);

/** Headers of the shape and size shelfapi sends on an item GET, rebuilt per request as shelfapi does. */
function itemHeaders(): Record<string, string | number> {
  const remaining = 40_000 + Math.floor(Math.random() * 10_000);
  return {
    'x-request-id': randomUUID(),
    'cache-control': 'private, no-store',
    'x-ratelimit-limit': 50_000,
    'x-ratelimit-remaining': remaining,
    'x-ratelimit-reset': 1796083200,
    'ratelimit-policy': '"burst";q=120;w=60, "quota";q=50000;w=2592000',
    ratelimit: `"burst";r=${119};t=60, "quota";r=${remaining};t=${554624}`,
    'content-type': 'application/json; charset=utf-8',
    etag: '"_ZScOGGItPF6FP0_MlsMsXpYnJk6Fsbq"',
  };
}

if (mode === 'fastify') {
  const app = Fastify({ logger: false });
  app.get('/', async (_request, reply) => {
    reply.headers(itemHeaders());
    return body;
  });
  await app.listen({ port, host: '127.0.0.1' });
  listening();
} else {
  createServer((_req, res) => {
    const headers = mode === 'headers' ? itemHeaders() : { 'content-type': 'application/json; charset=utf-8' };
    res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }).listen(port, '127.0.0.1', listening);
}
