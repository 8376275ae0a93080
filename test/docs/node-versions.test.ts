// The Node versions the project names are the ones CI tests: `engines` (the server's and the client's) names
// the machine's Node 20 and the major CI runs the whole suite on (TEST_NODE_MAJOR, scripts/test-node.ts),
// `.nvmrc` that major, the README quotes engines, and the Node running these tests is one of them.
// And in npm test, the Node a part was given is the one its processes run on, children included, each loading
// the build of better-sqlite3 for its own Node (placeBuilds in scripts/test-node.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { TEST_NODE_MAJOR } from '../../scripts/test-node.js';
import { passedOnEnv, ROOT } from '../helpers/server-process.js';

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const engines = (file: string) => (JSON.parse(read(file)) as { engines: { node: string } }).engines.node;

/** Whether `version` (x.y.z) is in a range of caret ranges joined by `||`, as engines writes them here. */
function satisfies(version: string, range: string): boolean {
  const [major, minor, patch] = version.split('.').map(Number) as [number, number, number];
  return range.split('||').some((part) => {
    const match = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(part);
    assert.ok(match, `engines part ${JSON.stringify(part)} is a caret range`);
    const [want, wantMinor, wantPatch] = match.slice(1).map(Number) as [number, number, number];
    return major === want && (minor > wantMinor || (minor === wantMinor && patch >= wantPatch));
  });
}

test('engines, .nvmrc and the README name the Nodes CI tests, and this Node is one of them', () => {
  const range = engines('package.json');
  const parts = range.split('||').map((part) => part.trim());
  assert.equal(parts.length, 2, `engines (${range}) names two Nodes: the machine's 20 and ${TEST_NODE_MAJOR}`);
  assert.equal(parts[0], '^20.15.0', "the machine's Node 20, on which CI runs a share of the suite");
  assert.ok((parts[1] ?? '').startsWith(`^${TEST_NODE_MAJOR}.`), `the Node CI runs the whole suite on, ${TEST_NODE_MAJOR}`);
  assert.equal(engines('clients/typescript/package.json'), range, "the client's engines: its tests run on both");
  assert.equal(read('.nvmrc').trim(), TEST_NODE_MAJOR, `.nvmrc names ${TEST_NODE_MAJOR} (nvm takes a major to mean its latest release)`);
  assert.ok(read('README.md').includes(`\`${range}\``), `the README quotes engines: \`${range}\``);
  assert.ok(satisfies(process.versions.node, range), `Node ${process.versions.node} is one that engines names`);
});

// npm test sets TEST_NODE_VERSION for each part (scripts/test-all.ts); alone, this file has nothing to compare.
const expected = process.env.TEST_NODE_VERSION;
test(
  "npm test's Node for this part runs this file, `node` on PATH and the tests' children, each loading better-sqlite3",
  { skip: expected === undefined ? 'TEST_NODE_VERSION is set by npm test' : false },
  () => {
    assert.equal(process.version, expected);
    // The build of better-sqlite3 for this Node (with TEST_NODE, each Node's own: scripts/test-node.ts).
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => { close(): void };
    new Database(':memory:').close();
    const script = "require('better-sqlite3')(':memory:').close(); process.stdout.write(process.version)";
    // As tests start children: process.execPath (the CLI, servers), or `node` from PATH (npm scripts, shells),
    // with the environment they pass on.
    for (const node of [process.execPath, 'node']) {
      const child = spawnSync(node, ['-e', script], { cwd: ROOT, env: passedOnEnv(), encoding: 'utf8' });
      assert.deepEqual({ node, status: child.status, stdout: child.stdout, stderr: child.stderr }, { node, status: 0, stdout: expected, stderr: '' });
    }
  },
);
