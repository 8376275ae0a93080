/**
 * The suite's passes, and `npm test`, which runs them all.
 *
 * `node --import tsx scripts/test-all.ts sqlite|postgres` runs one store's pass, every file of it, one file
 * at a time (`npm run test:sqlite`, `npm run test:postgres`). Without an argument (`npm test`): two lanes
 * side by side, then a quiet phase.
 * - The lanes: the SQLite pass then the TypeScript client's tests; the PostgreSQL + Redis pass then the Python
 *   client's. The passes spend much of their time waiting (child servers starting, PostgreSQL, Redis, pip), so
 *   two lanes on a 2-core machine take a little over half the time of one. Each file has its own databases
 *   and Redis key space (test/helpers/private-services.ts): the lanes share nothing but the servers.
 * - The quiet phase: the files that time an outage ("a 503 within 2 seconds", the contract's promise) run
 *   after the lanes, alone, on each store, so that the other lane's load cannot make them late.
 * dist/ is compiled once first: the tests run the built CLI, and two lanes must not compile at once.
 *
 * TEST_NODE (`fetch`, or the path of a node binary: scripts/test-node.ts) runs the whole suite on that Node: both
 * lanes, the timed files, `npm run test:sqlite` and `npm run test:postgres`. So that the Node running this
 * script (the machine's) stays tested too, a short share of the SQLite pass (RUNNING_NODE_SHARE) runs on it
 * after the lanes. Unset, everything runs on the Node that runs this script. CI sets TEST_NODE=fetch (.ci/run).
 * Both Nodes load better-sqlite3 from node_modules, each its own build (placeBuilds in scripts/test-node.ts);
 * the machine's build is back in build/Release at the end.
 *
 * Each line of output is prefixed with its lane; the end repeats every failed test with its error (CI shows only
 * the tail of a long log), then names each part, its Node, its time and result.
 * The exit code is 0 only when every part passed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { placeBuilds, restoreBuilds, testNode, type TestNode } from './test-node.js';

/** Every `*.test.ts` under these folders, sorted. */
function testFiles(folders: readonly string[]): string[] {
  return folders
    .flatMap((folder) => readdirSync(folder, { recursive: true, encoding: 'utf8' }).map((file) => join(folder, file)))
    .filter((file) => file.endsWith('.test.ts'))
    .sort();
}

const PASSES = {
  sqlite: { env: {}, files: () => testFiles(['test']).filter((file) => !file.startsWith('test/cluster/')) },
  postgres: {
    env: { TEST_STORE: 'postgres' },
    files: () => testFiles(['test/http', 'test/metering', 'test/usage-stats', 'test/store', 'test/cluster', 'test/settings']).filter((file) => !file.endsWith('.browser.test.ts')),
  },
} as const;
type Store = keyof typeof PASSES;

/** Files that assert how soon an outage is answered: run alone, after the lanes. */
const TIMED = new Set([
  'test/cluster/outages.test.ts',
  'test/cluster/redis-cluster.test.ts',
  'test/metering/faults-sqlite-lock.test.ts',
  'test/metering/faults-give-back.test.ts',
  'test/metering/faults-redis.test.ts',
  'test/settings/outages.test.ts',
]);

/**
 * With TEST_NODE, the share of the SQLite pass that runs on this script's Node as well: the test that frees
 * many native statements, the two files that work SQLite hardest (search and catalogue pages), the request
 * pipeline, the CLI loading and seeding a store file, the Node versions test, the server's heap growth, and the
 * TypeScript client's README script and CSV reader (the client's engines name this Node too).
 */
const RUNNING_NODE_SHARE = [
  'test/store/native-objects-gc.test.ts',
  'test/store/search-index.test.ts',
  'test/http/catalogue.test.ts',
  'test/http/pipeline-order.test.ts',
  'test/http/pipeline-access-metering.test.ts',
  'test/http/pipeline-responses.test.ts',
  'test/cli/cli-load.test.ts',
  'test/docs/node-versions.test.ts',
  'test/observability/heap-growth.test.ts',
  'clients/typescript/test/package.test.ts',
  'clients/typescript/test/csv.test.ts',
];

const results: Array<{ part: string; node: string; code: number | null; seconds: number }> = [];

/**
 * The TAP lines of failed tests: each `not ok` line and the YAML block under it (location, error, stack),
 * kept to be printed again at the end. A test that fails prints `not ok` for its suite too: that line comes
 * with its own short block, so nested failures read top to bottom as they happened.
 */
const failures: string[] = [];
const FAILURE_LINES = 400;
function failureCollector(lane: string): (line: string) => void {
  let block: string | undefined; // the indentation of the YAML block being copied
  return (line) => {
    if (/^\s*not ok \d+ /.test(line)) {
      block = /^\s*/.exec(line)![0];
      failures.push(`[${lane}] ${line}`);
      return;
    }
    if (block === undefined) return;
    failures.push(`[${lane}] ${line}`);
    if (line === `${block}  ...`) block = undefined;
  };
}

/**
 * Runs one part on `node` (this script's Node unless given): its processes start with that node and find it
 * first on PATH. TEST_NODE_VERSION tells test/docs/node-versions.test.ts which Node it must find.
 */
function run(lane: string, part: string, command: string, args: string[], env: Record<string, string> = {}, node?: TestNode): Promise<boolean> {
  const started = Date.now();
  const version = node?.version ?? process.version;
  return new Promise((resolve) => {
    const child = spawn(command === 'node' ? (node?.node ?? process.execPath) : command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...node?.env, TEST_NODE_VERSION: version, ...env },
    });
    const collect = failureCollector(lane);
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        process.stdout.write(`[${lane}] ${line}\n`);
        collect(line);
      });
    }
    child.once('close', (code) => {
      results.push({ part, node: version, code, seconds: Math.round((Date.now() - started) / 1000) });
      resolve(code === 0);
    });
  });
}

/**
 * Runs test files, reporting TAP, which failureCollector reads: the default when the output is a pipe on Node
 * 20, but from Node 23 on the default is spec, whatever the output. (Asked for on the command line: in
 * NODE_OPTIONS it would add a second reporter to the tests that start a runner with one of their own, an error.
 * `npm run test:client` asks for it itself.)
 */
function runFiles(lane: string, part: string, store: Store, files: string[], node?: TestNode): Promise<boolean> {
  const args = ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-timeout=180000', '--test-reporter=tap', ...files];
  return run(lane, part, 'node', args, PASSES[store].env, node);
}

const build = spawnSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const only = process.argv[2];
if (only !== undefined && only !== 'sqlite' && only !== 'postgres') {
  process.stderr.write(`usage: test-all.ts [sqlite|postgres]; got ${JSON.stringify(only)}\n`);
  process.exit(2);
}
/**
 * The Node that TEST_NODE names, made ready before any pass starts (fetched and better-sqlite3 built for it:
 * two minutes the first time, a second after; .ci/run does it during lint and build). Output of the setup
 * carries the lane `test node`. If it cannot be made ready nothing runs: TEST_NODE asked for that Node, and
 * a pass on another would not be the answer asked for.
 */
let node: TestNode | undefined;
if (process.env.TEST_NODE) {
  if (!(await run('test node', 'Node setup', 'node', ['--import', 'tsx', 'scripts/test-node.ts', '--setup']))) {
    process.stdout.write(`\nNode setup failed (TEST_NODE=${process.env.TEST_NODE}): no pass was run.\n`);
    process.exit(1);
  }
  node = testNode();
  placeBuilds(node);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      restoreBuilds();
      process.exit(130);
    });
  }
}

let ok: boolean;
if (only !== undefined) {
  ok = await runFiles(only, `${only} pass`, only, PASSES[only].files(), node);
} else {
  const lane = async (store: Store, after: string): Promise<boolean> => {
    const passed = await runFiles(store, `${store} pass`, store, PASSES[store].files().filter((file) => !TIMED.has(file)), node);
    // A failed pass does not stop its lane: the next part may show more of what is wrong.
    return (await run(store, after, 'npm', ['run', '--silent', after], {}, node)) && passed;
  };
  const lanes = await Promise.all([lane('sqlite', 'test:client'), lane('postgres', 'test:python')]);
  // After the lanes, not in one: package.test.ts reads the client's dist/, which test:client rebuilds.
  const share = node === undefined ? [] : [await runFiles('sqlite share', 'sqlite share', 'sqlite', RUNNING_NODE_SHARE)];
  const quiet: boolean[] = [];
  for (const store of ['sqlite', 'postgres'] as const) {
    const timed = PASSES[store].files().filter((file) => TIMED.has(file));
    quiet.push(await runFiles(`${store} timed`, `${store} timed files`, store, timed, node));
  }
  ok = [...lanes, ...share, ...quiet].every(Boolean);
}
if (node !== undefined) restoreBuilds();
if (failures.length > 0) {
  process.stdout.write(`\nFailed tests, again (${failures.length > FAILURE_LINES ? `the first ${FAILURE_LINES} lines` : 'whole'}):\n`);
  process.stdout.write(`${failures.slice(0, FAILURE_LINES).join('\n')}\n`);
}
process.stdout.write('\nnpm test:\n');
for (const r of results) {
  process.stdout.write(`  ${r.part.padEnd(20)} ${`Node ${r.node}`.padEnd(14)} ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} in ${r.seconds} s\n`);
}
process.exit(ok ? 0 : 1);
