// better-sqlite3's statements and connections may be freed by the garbage collector at any time: the store
// prepares statements per query (Kysely, pragmas, seeding) and opens a connection per export or search
// rebuild. better-sqlite3 12 wraps them in Node's ObjectWrap, compiled into the addon from the headers it was
// built against; from 24.19 such a build registers a cleanup hook per object, and on Node 24.19 to 24.21 the
// collector freeing one aborted the process ("Assertion failed: (env) != nullptr" in
// RemoveEnvironmentCleanupHook, exit 134): `serve` died while seeding. Node 24.22 and 26 do not: CI builds
// better-sqlite3 against the headers of the Node it runs on (scripts/test-node.ts), and this test says so.
// On an aborting Node the child (same node, same build) aborts in 2 runs of 3 or more: it runs 3 times.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { ROOT } from '../helpers/server-process.js';

const CHILD = fileURLToPath(new URL('./native-objects-gc.child.cjs', import.meta.url));

function runChild(): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CHILD], { cwd: ROOT }, (error, stdout, stderr) => {
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr: error === null ? '' : stderr });
    });
  });
}

test('statements and connections freed by the garbage collector do not abort the process', async () => {
  for (let run = 1; run <= 3; run++) {
    const { code, signal, stdout, stderr } = await runChild();
    assert.equal(stderr.includes('RemoveEnvironmentCleanupHook'), false, `better-sqlite3 aborted on ${process.version} (run ${run}):\n${stderr}`);
    assert.deepEqual({ code, signal, stdout }, { code: 0, signal: null, stdout: 'freed' });
  }
});
