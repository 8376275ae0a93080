/**
 * Runs of one store's server in turns: with `serve --workers 1` and `2` (BENCH_ONLY=workers, and the full run),
 * and with each setting of BENCH_AB (BENCH_ONLY=ab).
 */
import { log, peakRssMb } from './bench-support.js';
import { AB_RUNS, AB_SCENARIOS, AB_VARIANTS, DURATION, SCENARIOS, V1, WARMUP, type Scenario } from './run-config.js';
import { guideWritten } from './run-exports.js';
import { stopTarget, wrk, type Baseline, type Row, type Target } from './run-servers.js';

export const WORKER_COUNTS = [1, 2] as const;

/** Item GET at CONNECTIONS connections with `serve --workers N` for each N, one server at a time. */
export async function runWorkers(start: (workers: number) => Promise<Target>, keysFile: string, baseline: Baseline): Promise<Row[]> {
  const rows: Row[] = [];
  for (const workers of WORKER_COUNTS) {
    const target = await start(workers);
    const scenario = `GET /catalogue/:id, --workers ${workers}`;
    log(`${target.name}: ${scenario}`);
    wrk(target.base, [`${V1}/catalogue/{id}`], keysFile, WARMUP);
    rows.push(baseline.beside(scenario, target.name, () => wrk(target.base, [`${V1}/catalogue/{id}`], keysFile, DURATION)));
    await stopTarget(target);
  }
  return rows;
}

/**
 * BENCH_ONLY=ab on one store: for each of BENCH_AB_RUNS rounds, each variant of BENCH_AB in turn on a fresh
 * server (its settings added to the server's environment), each of AB_SCENARIOS warmed up then measured beside
 * the baseline. The rows' target names the variant; compare a variant's ratios with the others' of the same round.
 */
export async function runAb(
  store: 'sqlite' | 'postgres',
  start: (env: Record<string, string>) => Promise<Target>,
  guideDir: string,
  keyFiles: Record<Scenario['keys'], string>,
  baseline: Baseline,
  published: { file: string },
): Promise<Row[]> {
  const variants = AB_VARIANTS.map((text) => ({
    label: text === '' ? 'as it is' : text,
    env: Object.fromEntries(
      text
        .split(/\s+/)
        .filter((pair) => pair !== '')
        .map((pair) => {
          const at = pair.indexOf('=');
          if (at < 1) throw new Error(`BENCH_AB: expected NAME=VALUE, got ${JSON.stringify(pair)}`);
          return [pair.slice(0, at), pair.slice(at + 1)];
        }),
    ),
  }));
  if (variants.length < 2) throw new Error('BENCH_AB: give at least two settings, separated by ";" (e.g. "STATS_THREAD=on;STATS_THREAD=off")');
  const rows: Row[] = [];
  for (let round = 1; round <= AB_RUNS; round++) {
    for (const variant of variants) {
      const target = await start(variant.env);
      await guideWritten(guideDir);
      for (const scenario of SCENARIOS) {
        if (!AB_SCENARIOS.has(scenario.name)) continue;
        const keysFile = keyFiles[scenario.keys];
        const name = `${store}, ${variant.label}, round ${round}`;
        log(`${name}: ${scenario.name}`);
        const paths = scenario.publishedOnly ? published : scenario.paths;
        wrk(target.base, paths, keysFile, WARMUP);
        rows.push(baseline.beside(scenario.name, name, () => wrk(target.base, paths, keysFile, DURATION)));
      }
      log(`${store}, ${variant.label}, round ${round}: peak RSS ${peakRssMb(target.child.pid!)} MB`);
      await stopTarget(target);
    }
  }
  return rows;
}
