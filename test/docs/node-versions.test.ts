// The Node versions the project names are the ones it is tested on: `engines` (the server's and the
// client's), `.nvmrc` (the documented version) and the README agree, and the Node running these tests is
// one of them. The server names 20 and 24 (CI runs a part of the suite on 24: .ci/run); the client 20 only.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/server-process.js';

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
  assert.equal(engines('clients/typescript/package.json'), '^20.15.0', "the client's engines: its tests run on 20");
  const documented = read('.nvmrc').trim();
  // nvm takes a major version to mean its latest release.
  assert.ok(range.split('||').some((part) => part.trim().startsWith(`^${documented}.`)), `.nvmrc (${documented}) is a major that engines names`);
  assert.ok(read('README.md').includes(`\`${range}\``), 'the README quotes engines');
  assert.ok(read('README.md').includes("the TypeScript client's: `^20.15.0`"), "the README quotes the client's engines");
  assert.ok(satisfies(process.versions.node, range), `Node ${process.versions.node} is one that engines names`);
});
