/**
 * The baseline of every benchmark: a raw node:http server answering a fixed JSON body the size of a
 * catalogue item. Whatever shelfapi does, it cannot beat this on the same machine.
 */
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 18090);
const size = Number(process.env.BODY_BYTES ?? 520);
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

createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}).listen(port, '127.0.0.1', () => process.stdout.write(`baseline listening on ${port}\n`));
