// The Node versions the project names are the ones it is tested on: `engines` (the server's and the
// client's), `.nvmrc` (the documented version, 24) and the README agree, and the Node running these tests is
// one of them. CI runs the SQLite pass and the client's tests on 24 and the PostgreSQL pass and a share of the
// SQLite pass (with the client's README script) on 20 (scripts/test-all.ts with TEST_NODE24).
// And in npm test, the Node a part was given is the one its processes run on, children included.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
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

test('engines, .nvmrc and the README name the same Node versions, and this Node is one of them', () => {
  const range = engines('package.json');
  assert.equal(range, '^20.15.0 || ^24.0.0');
  assert.equal(engines('clients/typescript/package.json'), range, "the client's engines: its tests run on 24, its README script on 20");
  const documented = read('.nvmrc').trim();
  // nvm takes a major version to mean its latest release.
  assert.ok(range.split('||').some((part) => part.trim().startsWith(`^${documented}.`)), `.nvmrc (${documented}) is a major that engines names`);
  assert.ok(read('README.md').includes(`\`${range}\``), 'the README quotes engines');
  assert.equal(documented, '24', '.nvmrc names the documented Node, 24');
  assert.ok(satisfies(process.versions.node, range), `Node ${process.versions.node} is one that engines names`);
});

// npm test sets TEST_NODE_VERSION for each part (scripts/test-all.ts); alone, this file has nothing to compare.
const expected = process.env.TEST_NODE_VERSION;
test(
  "npm test's Node for this part runs this file, `node` on PATH and the tests' children, each loading better-sqlite3",
  { skip: expected === undefined ? 'TEST_NODE_VERSION is set by npm test' : false },
  () => {
    assert.equal(process.version, expected);
    // The build of better-sqlite3 that fits this Node (on 24 in npm test: the one scripts/node24.ts compiled).
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
