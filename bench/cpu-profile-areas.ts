/**
 * Where a server's CPU went, by area of the request path, from a `node --cpu-prof` profile taken under wrk
 * (docs/performance.md, "Where the time goes now"):
 *
 *   node --import tsx bench/cpu-profile-areas.ts PROFILE.cpuprofile [US_PER_REQUEST]
 *
 * Reads the profile's last WINDOW_S seconds (default 10, the measured wrk run; the half second before the
 * end is left out, the server shutting down) and sums self time by area. A sample in a native or `node:`
 * frame (a SQLite step, `writev`, a hash) is charged to the nearest project or library frame that called
 * it, so "item read" includes SQLite's work for it. The hot queries of src/store/hot-queries.ts are told
 * apart by the caller's name when the profile keeps it, else by HOT_QUERY_COLUMNS ("878=access version
 * read;1027=item read": columns of the caller in the transpiled file, as tsx minifies whitespace). With
 * US_PER_REQUEST (the process's CPU time per request, measured apart), each share is also given in µs.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, usArg] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write('usage: cpu-profile-areas.ts PROFILE.cpuprofile [US_PER_REQUEST]\n');
  process.exit(2);
}
const windowUs = Number(process.env.WINDOW_S ?? 10) * 1e6;
const usPerRequest = usArg === undefined ? null : Number(usArg);
const hotQueryColumns = new Map(
  (process.env.HOT_QUERY_COLUMNS ?? '')
    .split(';')
    .filter((pair) => pair.includes('='))
    .map((pair) => pair.split('=', 2) as [string, string]),
);

const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parents = new Map<number, number>();
for (const n of profile.nodes) for (const child of n.children ?? []) parents.set(child, n.id);
// A server run from the build (`node bin/shelfapi.js`, as the bench runs it) has its frames under dist/:
// the same modules as under src/.
const distDir = `file://${ROOT_DIR}/dist/`;
for (const n of profile.nodes) if (n.callFrame.url.startsWith(distDir)) n.callFrame.url = n.callFrame.url.replace(distDir, `file://${ROOT_DIR}/src/`);

/** Frames charged to their caller: natives, Node's own modules, the SQLite binding, the prepared-query wrapper. */
const passesThrough = (url: string) =>
  url === '' || url.startsWith('node:') || url.includes('better-sqlite3') || url.includes('/src/store/prepared-query');

const HOT_QUERY_NAMES: Record<string, string> = {
  keyByHash: 'key lookup (join by key hash)',
  accessVersion: 'access version read',
  catalogueItem: 'item read',
  price: 'price read',
  dataVersion: 'data version read',
};

function areaOfFrame(frame: CallFrame, throughNode: boolean): string {
  const url = frame.url;
  if (url.includes('/src/store/hot-queries')) {
    return HOT_QUERY_NAMES[frame.functionName] ?? hotQueryColumns.get(String(frame.columnNumber)) ?? `hot query at column ${frame.columnNumber}`;
  }
  if (url.includes('/src/auth/') || url.includes('/src/keys/')) return 'key checks (src/auth, src/keys)';
  if (url.includes('/src/usage-stats/database-usage-stats') || url.includes('/src/usage-stats/usage-stats') || url.includes('/usage-record')) {
    return "owners' statistics";
  }
  if (url.includes('/src/metering/')) return 'meter (admission, group commit)';
  if (url.includes('/src/http/api/conditional')) return 'ETag';
  if (url.includes('/src/http/api/routes') || url.includes('/src/store/') || url.includes('fast-json-stringify')) return 'route handler, schemas, JSON';
  if (url.includes('/src/http/')) return 'pipeline hooks (src/http)';
  if (url.includes('/src/observability') || url.includes('prom-client')) return 'metrics';
  if (url.includes('/pino') || url.includes('sonic-boom')) return 'logging';
  if (/node_modules\/(pg|pg-protocol|pg-pool|pg-types)\//.test(url)) return 'PostgreSQL client (pg, with its socket writes)';
  if (/node_modules\/(ioredis|redis-parser|redis-errors|standard-as-callback|cluster-key-slot)\//.test(url)) {
    return 'Redis client (ioredis, with its socket writes)';
  }
  if (/node_modules\/(fastify|find-my-way|light-my-request|avvio)\//.test(url)) {
    return throughNode ? 'node:http, sockets, event loop' : 'Fastify (routing, hooks, reply)';
  }
  return 'other';
}

function areaOf(id: number): string {
  const sampled = nodes.get(id)!;
  const name = sampled.callFrame.functionName;
  if (name === '(idle)') return 'idle';
  if (name === '(garbage collector)') return 'garbage collection';
  if (name === '(program)') return 'V8, unattributed';
  let node: ProfileNode | undefined = sampled;
  let throughNode = false;
  while (node !== undefined && passesThrough(node.callFrame.url)) {
    throughNode = true;
    const parent = parents.get(node.id);
    node = parent === undefined ? undefined : nodes.get(parent);
  }
  return node === undefined ? 'node:http, sockets, event loop' : areaOfFrame(node.callFrame, throughNode);
}

let elapsed = 0;
const times = profile.timeDeltas.map((delta) => (elapsed += delta));
const end = times.at(-1) ?? 0;
const areas = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const at = times[i]!;
  if (at < end - windowUs - 500_000 || at > end - 500_000) return;
  const delta = profile.timeDeltas[i]!;
  const area = areaOf(id);
  areas.set(area, (areas.get(area) ?? 0) + delta);
  total += delta;
});
const busy = total - (areas.get('idle') ?? 0);
areas.delete('idle');
process.stdout.write(`busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s\n\n| area | share |${usPerRequest === null ? '' : ' µs |'}\n|---|---:|${usPerRequest === null ? '' : '---:|'}\n`);
for (const [area, time] of [...areas].sort((a, b) => b[1] - a[1])) {
  const us = usPerRequest === null ? '' : ` ${Math.round((usPerRequest * time) / busy)} |`;
  process.stdout.write(`| ${area} | ${((100 * time) / busy).toFixed(1)}% |${us}\n`);
}
