// better-sqlite3's statements and connections may be freed by the garbage collector at any time: the store
// prepares statements per query (Kysely, pragmas, seeding) and opens a connection per export or search
// rebuild. On Node 24.19 and later, a better-sqlite3 12 compiled against that Node's headers aborts the
// process when the collector frees one ("Assertion failed: (env) != nullptr" in RemoveEnvironmentCleanupHook,
// exit 134), so `serve` dies while seeding; .ci/node24 compiles it against Node 24.18.1's headers instead.
// This runs the pattern in a child process of the same node and the same build, which must end normally.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { ROOT } from '../helpers/server-process.js';

const CHILD = `
const Database = require('better-sqlite3');
const db = new Database(':memory:');
// Statements dropped right away, as Kysely's driver and db.pragma() do; enough for several collections.
for (let i = 0; i < 50000; i++) db.prepare('select ' + (i % 100)).get();
// Connections opened and closed, as exports and the search index builder do.
for (let i = 0; i < 2000; i++) {
  const other = new Database(':memory:');
  other.prepare('select 1').get();
  other.close();
}
db.close();
process.stdout.write('freed');
`;

test('statements and connections freed by the garbage collector do not abort the process', async () => {
  const { code, signal, stdout, stderr } = await new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>(
    (resolve) => {
      const child = execFile(process.execPath, ['--input-type=commonjs', '-e', CHILD], { cwd: ROOT }, (error, stdout, stderr) => {
        resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr: error === null ? '' : stderr });
      });
    },
  );
  assert.equal(stderr.includes('RemoveEnvironmentCleanupHook'), false, `better-sqlite3 aborted on ${process.version}:\n${stderr}`);
  assert.deepEqual({ code, signal, stdout }, { code: 0, signal: null, stdout: 'freed' });
});
