/**
 * Searches drawn from the data (BENCH_ONLY=search, and the full run): one- to three-term searches of the
 * catalogue's own words, cold and warm, one at a time and at 50 connections, and the mixed scenario.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { log } from './bench-support.js';
import { seededRandom } from '../src/demo/random.js';
import { CONNECTIONS, DATA, DURATION, ITEMS, PLATFORMS, V1 } from './run-config.js';
import { readNames } from './run-data.js';
import { stopTarget, wrk, wrkAsync, type Paths, type Target, type WrkResult } from './run-servers.js';

/** Names read to draw terms from, and the searches made of them. */
const DRAWN_NAMES = 3000;
const DRAWN_SEARCHES = 3000;
const MAX_DRAWN_OFFSET = 2000;

export interface DrawnSearches {
  /** Request paths, one per search (80% /catalogue, 20% /prices). */
  paths: string[];
  distinctTerms: number;
  twoCharacterTerms: number;
}

/**
 * Searches made of the catalogue's own names: whole words and two-character pieces of words, one to three
 * terms each, offsets up to 2,000 on a third of them, so that common, rare and short terms all come up
 * in the proportions the data has.
 */
export async function drawSearches(store: string, databaseUrl: string): Promise<DrawnSearches> {
  const rnd = seededRandom(12);
  const ids = Array.from({ length: DRAWN_NAMES }, () => 1 + Math.floor(rnd() * ITEMS));
  const words = (await readNames(store, databaseUrl, ids)).flatMap((name) => name.split(/\s+/u)).filter((w) => w.length >= 2);
  if (words.length === 0) throw new Error('no names to draw searches from');
  // Half the words as often as the names use them (common terms come up often), half uniformly over the
  // distinct words (rare ones come up too).
  const distinctWords = [...new Set(words)];
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const terms = new Set<string>();
  let twoCharacterTerms = 0;
  const term = () => {
    const word = pick(rnd() < 0.5 ? words : distinctWords);
    if (rnd() < 0.25) {
      const at = Math.floor(rnd() * (word.length - 1));
      twoCharacterTerms++;
      return word.slice(at, at + 2);
    }
    return word;
  };
  const paths = Array.from({ length: DRAWN_SEARCHES }, () => {
    const roll = rnd();
    const count = roll < 0.5 ? 1 : roll < 0.85 ? 2 : 3;
    const chosen = Array.from({ length: count }, term);
    for (const t of chosen) terms.add(t.toLowerCase());
    const offset = rnd() < 0.33 ? `&offset=${Math.floor(rnd() * (MAX_DRAWN_OFFSET + 1))}` : '';
    const list = rnd() < 0.8 ? 'catalogue' : 'prices';
    return `${V1}/${list}?search=${encodeURIComponent(chosen.join(' '))}${offset}`;
  });
  if (terms.size < 1000) throw new Error(`only ${terms.size} distinct terms drawn; the workload wants at least 1,000`);
  return { paths, distinctTerms: terms.size, twoCharacterTerms };
}

export interface Percentiles {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
}

/** Each distinct path once, one at a time, timed one by one: per request latency with nothing queued. */
export async function eachOnce(base: string, paths: readonly string[], key: string): Promise<Percentiles> {
  const times: number[] = [];
  let non2xx = 0;
  for (const path of new Set(paths)) {
    const started = performance.now();
    const res = await fetch(`${base}${path}`, { headers: { 'x-api-key': key } });
    await res.arrayBuffer();
    times.push(performance.now() - started);
    if (res.status < 200 || res.status > 299) non2xx++;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round((times[Math.min(times.length - 1, Math.floor(times.length * q))] ?? 0) * 100) / 100;
  return { requests: times.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: Math.round((times.at(-1) ?? 0) * 100) / 100, non2xx };
}

export interface SearchIndexMemory {
  items: number;
  bytes: number;
}

export async function searchIndexGauges(opsBase: string): Promise<SearchIndexMemory & { ready: boolean }> {
  const text = await (await fetch(`${opsBase}/metrics`)).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { items: gauge('shelfapi_search_index_items'), bytes: gauge('shelfapi_search_index_bytes'), ready: gauge('shelfapi_search_index_ready') === 1 };
}

/**
 * Waits until the server's search index is built (a server starts serving after 8 s even when it is not,
 * and the store answers searches meanwhile); returns the index's size and the seconds since `since`.
 */
export async function searchIndexReady(target: Target, since: number): Promise<SearchIndexMemory & { readySeconds: number }> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const gauges = await searchIndexGauges(target.opsBase!);
    if (gauges.ready) return { items: gauges.items, bytes: gauges.bytes, readySeconds: Math.round((Date.now() - since) / 100) / 10 };
    if (Date.now() > deadline) throw new Error(`${target.name}: the search index was not built within 5 minutes`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface MixedKind {
  kind: string;
  connections: number;
  paths: Paths;
  keys: 'bench' | 'collector';
}

/** Item and price GETs with searches and list pages beside them, each kind its own wrk, all at once. */
export function mixedKinds(searchFile: string): MixedKind[] {
  return [
    { kind: 'GET /catalogue/:id', connections: 20, paths: [`${V1}/catalogue/{id}`], keys: 'bench' },
    { kind: 'GET /prices/:id', connections: 10, paths: [`${V1}/prices/{id}`], keys: 'bench' },
    { kind: 'search (data-drawn)', connections: 15, paths: { file: searchFile }, keys: 'bench' },
    {
      kind: 'list pages (platform)',
      connections: 5,
      paths: PLATFORMS.flatMap((p) => [`${V1}/catalogue?platform=${p}`, `${V1}/prices?platform=${p}`]),
      keys: 'bench',
    },
  ];
}

export interface SearchRun {
  target: string;
  distinctTerms: number;
  twoCharacterTerms: number;
  searches: number;
  index: SearchIndexMemory & { readySeconds: number };
  firstRequestsAfterStart: Percentiles;
  eachOnceWarm: Percentiles;
  cold: WrkResult;
  warm: WrkResult;
  mixed: Array<{ kind: string; connections: number; result: WrkResult }>;
}

/**
 * The data-drawn search workload on one store: a fresh process answers every distinct search once (the
 * first request of each after start), then wrk at 50 connections right after a restart (cold) and again
 * (warm), every search once more one at a time (warm), and the mixed scenario.
 */
export async function runSearches(store: string, databaseUrl: string, start: () => Promise<Target>, keyFiles: Record<'bench' | 'collector', string>, key: string): Promise<SearchRun> {
  const drawn = await drawSearches(store, databaseUrl);
  const searchFile = join(DATA, `${store}-drawn-searches.txt`);
  writeFileSync(searchFile, `${drawn.paths.join('\n')}\n`);
  log(`${store}: ${drawn.paths.length} data-drawn searches, ${drawn.distinctTerms} distinct terms (${drawn.twoCharacterTerms} two-character)`);

  let started = Date.now();
  let target = await start();
  const index = await searchIndexReady(target, started);
  log(`${target.name}: search index ${index.items} items, ${(index.bytes / 2 ** 20).toFixed(1)} MiB, ready ${index.readySeconds} s after the process started; each search once`);
  const firstRequestsAfterStart = await eachOnce(target.base, drawn.paths, key);
  await stopTarget(target);

  started = Date.now();
  target = await start();
  await searchIndexReady(target, started);
  log(`${target.name}: data-drawn searches at ${CONNECTIONS} connections, cold (fresh process) then warm`);
  const cold = wrk(target.base, { file: searchFile }, keyFiles.bench, DURATION);
  const warm = wrk(target.base, { file: searchFile }, keyFiles.bench, DURATION);
  const eachOnceWarm = await eachOnce(target.base, drawn.paths, key);

  log(`${target.name}: mixed scenario (items, prices, searches, list pages at once)`);
  const kinds = mixedKinds(searchFile);
  const results = await Promise.all(kinds.map((k) => wrkAsync(target.base, k.paths, keyFiles[k.keys], DURATION, k.connections)));
  await stopTarget(target);
  return {
    target: target.name,
    distinctTerms: drawn.distinctTerms,
    twoCharacterTerms: drawn.twoCharacterTerms,
    searches: drawn.paths.length,
    index,
    firstRequestsAfterStart,
    eachOnceWarm,
    cold,
    warm,
    mixed: kinds.map((k, i) => ({ kind: k.kind, connections: k.connections, result: results[i]! })),
  };
}

export function searchTables(runs: readonly SearchRun[]): string {
  const ms = (us: number) => (us / 1000).toFixed(2);
  return [
    'Searches drawn from the data (one- to three-term searches of words and two-character pieces of item names, offsets up to 2,000; 80% /catalogue, 20% /prices):',
    '',
    '| target | searches (distinct terms, two-character) | index items | index MiB | index ready after start s | each once after start p50 / p99 / max ms | each once warm p50 / p99 / max ms | 50 conn. cold req/s, p99 ms | 50 conn. warm req/s, p99 ms |',
    '|---|---|---:|---:|---:|---|---|---|---|',
    ...runs.map(
      (r) =>
        `| ${r.target} | ${r.searches} (${r.distinctTerms}, ${r.twoCharacterTerms}) | ${r.index.items} | ${(r.index.bytes / 2 ** 20).toFixed(1)} | ${r.index.readySeconds} | ` +
        `${r.firstRequestsAfterStart.p50Ms} / ${r.firstRequestsAfterStart.p99Ms} / ${r.firstRequestsAfterStart.maxMs} | ` +
        `${r.eachOnceWarm.p50Ms} / ${r.eachOnceWarm.p99Ms} / ${r.eachOnceWarm.maxMs} | ` +
        `${Math.round(r.cold.rps)}, ${ms(r.cold.p99Us)} | ${Math.round(r.warm.rps)}, ${ms(r.warm.p99Us)} |`,
    ),
    '',
    'Mixed: each kind its own wrk, all at once against one server (50 connections in all):',
    '',
    '| target | kind | connections | req/s | p50 ms | p99 ms | non-2xx |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...runs.flatMap((r) =>
      r.mixed.map((m) => `| ${r.target} | ${m.kind} | ${m.connections} | ${Math.round(m.result.rps)} | ${ms(m.result.p50Us)} | ${ms(m.result.p99Us)} | ${m.result.non2xx} |`),
    ),
  ].join('\n');
}
