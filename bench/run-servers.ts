/**
 * The servers a run measures and how: shelfapi and the raw node:http baseline started, wrk driven against
 * them, and the baseline measured again beside every scenario (Baseline).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { log, ROOT, waitUntilUp } from './bench-support.js';
import { CONNECTIONS, DURATION, ITEMS, PLAN_LIMITS, WARMUP } from './run-config.js';

export interface WrkResult {
  requests: number;
  rps: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  maxUs: number;
  non2xx: number;
  socketErrors: number;
}

export interface Target {
  name: string;
  base: string;
  opsBase: string | null;
  child: ChildProcess;
}

/** The servers' ports count up from here (BENCH_PORT), two per shelfapi server, one per baseline. */
export let nextPort = Number(process.env.BENCH_PORT ?? 18100);

/** Starts `shelfapi serve`; `env.TREE`, when given, names another checkout (built) whose server runs instead. */
export async function startShelfapi(name: string, env: Record<string, string>): Promise<Target> {
  const port = nextPort++;
  const opsPort = nextPort++;
  const root = env.TREE ?? ROOT;
  const child = spawn(process.execPath, [join(root, 'bin', 'shelfapi.js'), 'serve'], {
    cwd: root,
    // A scenario may bring limits of its own (the flood's quota). No drain delay: the bench stops servers
    // with SIGTERM between scenarios.
    env: { ...process.env, DRAIN_DELAY_MS: '0', LOG_LEVEL: 'warn', PLAN_LIMITS, ...env, PORT: String(port), OPS_PORT: String(opsPort) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilUp(`http://127.0.0.1:${opsPort}/healthz`, child);
  return { name, base: `http://127.0.0.1:${port}`, opsBase: `http://127.0.0.1:${opsPort}`, child };
}

/** The raw node:http baseline, or one of its floors (bench/baseline-server.ts, BASELINE_MODE). */
export async function startBaseline(mode: 'plain' | 'headers' | 'fastify' = 'plain'): Promise<Target> {
  const port = nextPort++;
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), BASELINE_MODE: mode },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilUp(`http://127.0.0.1:${port}/`, child);
  return { name: 'baseline', base: `http://127.0.0.1:${port}`, opsBase: null, child };
}

/** Paths for wrk: a list, or a file of one path a line (lists too long for an environment variable). */
export type Paths = string[] | { file: string };

export function wrkArgs(base: string, paths: Paths, keysFile: string | null, duration: string, connections: number, hotShare = 0) {
  return {
    args: ['-t1', `-c${connections}`, `-d${duration}`, '--timeout', '5s', '-s', join(ROOT, 'bench', 'wrk-random.lua'), base],
    env: {
      ...process.env,
      ...(Array.isArray(paths) ? { PATHS: paths.join('|') } : { PATHS_FILE: paths.file }),
      IDS: String(ITEMS),
      ...(keysFile ? { KEYS_FILE: keysFile } : {}),
      HOT_SHARE: String(hotShare),
    },
  };
}

export function parseWrk(out: string): WrkResult {
  const line = out.trim().split('\n').at(-1)!;
  return JSON.parse(line) as WrkResult;
}

export function wrk(base: string, paths: Paths, keysFile: string | null, duration: string, connections = CONNECTIONS, hotShare = 0): WrkResult {
  const { args, env } = wrkArgs(base, paths, keysFile, duration, connections, hotShare);
  return parseWrk(execFileSync('wrk', args, { env, encoding: 'utf8' }));
}

/** wrk without blocking: several run side by side against one server (the mixed scenario). */
export function wrkAsync(base: string, paths: Paths, keysFile: string | null, duration: string, connections: number): Promise<WrkResult> {
  const { args, env } = wrkArgs(base, paths, keysFile, duration, connections);
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { env, encoding: 'utf8' }, (error, stdout) => (error ? reject(error) : resolve(parseWrk(stdout))));
  });
}

/** Stops a server and waits for it to exit. */
export async function stopTarget(target: Target): Promise<void> {
  target.child.kill('SIGTERM');
  await new Promise((r) => target.child.once('exit', r));
}

export interface Row {
  scenario: string;
  target: string;
  result: WrkResult;
  /** The result's requests a second over `baselineRps`. */
  ratio: number;
  /** The mean of the baseline measured just before and just after this row's result. */
  baselineRps: number;
}

/**
 * The raw node:http baseline, kept up for the whole run and measured again after every scenario: each
 * scenario's ratio is to the mean of the baseline measured just before it and just after it. On these
 * virtual machines the baseline moved from 53,000 to 68,000 requests a second within the hour (2026-11-28),
 * so one baseline at the start of a run made the ratios of its last scenarios a measure of the machine.
 */
export class Baseline {
  /** The latest measurement: the one before the next scenario. */
  private last: WrkResult;

  private constructor(
    private readonly server: Target,
    /** The first measurement: the run's baseline row. */
    readonly first: WrkResult,
  ) {
    this.last = first;
  }

  static async start(): Promise<Baseline> {
    const server = await startBaseline();
    log(`baseline: ${DURATION} at ${CONNECTIONS} connections`);
    wrk(server.base, ['/'], null, WARMUP);
    return new Baseline(server, wrk(server.base, ['/'], null, DURATION));
  }

  /** Runs `measure` (a target's measured wrk run, warmed up already) and measures the baseline again after it. */
  beside(scenario: string, target: string, measure: () => WrkResult): Row {
    const before = this.last;
    const result = measure();
    // A short warm-up: the baseline server has run all along; it only needs its connections again.
    wrk(this.server.base, ['/'], null, '2s');
    this.last = wrk(this.server.base, ['/'], null, DURATION);
    const baselineRps = (before.rps + this.last.rps) / 2;
    return { scenario, target, result, ratio: Math.round((result.rps / baselineRps) * 1000) / 1000, baselineRps };
  }

  stop(): void {
    this.server.child.kill('SIGKILL');
  }
}
