// Every Markdown file that the source tree's READMEs and comments cite is in the repository, so a reader
// sent to it finds it: resolved from the citing file's folder (a link) or from the repository root.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/server-process.js';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : /\.(md|ts|tsx)$/.test(entry.name) ? [join(dir, entry.name)] : [],
  );
}

test('every .md file cited under src/ exists', () => {
  const missing: string[] = [];
  for (const file of filesUnder(join(ROOT, 'src'))) {
    for (const [cited] of readFileSync(file, 'utf8').matchAll(/[\w./-]+\.md\b/g)) {
      if (!existsSync(join(dirname(file), cited)) && !existsSync(join(ROOT, cited))) missing.push(`${relative(ROOT, file)}: ${cited}`);
    }
  }
  assert.deepEqual(missing, []);
});
