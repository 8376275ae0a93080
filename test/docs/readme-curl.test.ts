// The shell lines the README and examples/curl-jq.md give for saving an answer to a file, run as a reader
// would copy them: a refused request must fail the command and leave no file, not write its error body
// where the CSV was expected.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ROOT } from '../helpers/server-process.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

/** Every curl line in a ```sh block of the file that writes the answer body to a file (`-o` other than /dev/null). */
function curlLinesSavingToFile(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks
    .flatMap((block) => block.split('\n'))
    .filter((line) => /^curl /.test(line) && /\s-o\s+(?!\/dev\/null)\S/.test(line));
}

function runShell(line: string, cwd: string, env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', line], { cwd, env: { ...process.env, ...env } }, (error, _stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stderr }),
    );
  });
}

describe("the docs' curl lines that save an answer to a file", () => {
  let ctx: TestContext;
  let api: string;

  before(async () => {
    ctx = await createTestContext();
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    const address = ctx.app.server.address();
    assert.ok(address !== null && typeof address === 'object');
    api = `http://127.0.0.1:${address.port}${V1}`;
  });
  after(async () => ctx.close());

  for (const file of ['README.md', 'examples/curl-jq.md']) {
    test(`${file}: a refused export fails the command and writes no file`, async (t) => {
      const lines = curlLinesSavingToFile(file);
      assert.ok(lines.some((line) => line.includes('/prices/export.csv')), `${file} shows the CSV export saved to a file`);
      for (const line of lines) {
        const cwd = mkdtempSync(join(tmpdir(), 'shelfapi-curl-'));
        t.after(() => rmSync(cwd, { recursive: true, force: true }));
        // A key without the export scope: the server answers 403 with a JSON error body.
        const refused = await runShell(line, cwd, { KEY: ctx.loaded.keys['alice-noscope']!, API: api });
        assert.notEqual(refused.code, 0, `${line}\nexits non-zero on a 403`);
        const written = line.match(/\s-o\s+(\S+)/)![1]!;
        assert.equal(existsSync(join(cwd, written)), false, `${line}\nleaves no ${written} behind on a 403`);

        // And with a key that may export, the same line writes the CSV.
        const served = await runShell(line, cwd, { KEY: ctx.loaded.keys.alice!, API: api });
        assert.equal(served.code, 0, `${line}\n${served.stderr}`);
        assert.match(readFileSync(join(cwd, written), 'utf8'), /^masterItemId,name,/);
      }
    });
  }
});
