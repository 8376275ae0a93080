// `npm start` builds only when the compiled copy is out of date: a start with nothing changed skips the
// compiler (which takes tens of seconds), and a changed source file is compiled again before serving.
// Runs the build step of package.json's start script on a small project of the same configuration.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT } from '../helpers/server-process.js';

let dir: string;

/** The start script's commands before it runs the server. */
const buildStep = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.split(' && node ')[0]!;

function build(): void {
  execFileSync('bash', ['-c', buildStep], { cwd: dir, env: { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}` }, stdio: 'pipe' });
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'shelfapi-start-'));
  for (const file of ['tsconfig.json', 'tsconfig.build.json']) copyFileSync(join(ROOT, file), join(dir, file));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', scripts: { build: 'tsc -p tsconfig.build.json' } }));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/answer.ts'), 'export const answer: number = 1;\n');
  writeFileSync(join(dir, 'src/other.ts'), 'export const other: string = "x";\n');
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('npm start compiles when dist/ is missing or older than a source, and skips the compiler otherwise', () => {
  build();
  assert.match(readFileSync(join(dir, 'dist/answer.js'), 'utf8'), /answer = 1/);
  // Back-date the output, so that a compilation would show as a newer modification time.
  const past = new Date(Date.now() - 60_000);
  for (const file of ['answer.js', 'other.js']) utimesSync(join(dir, 'dist', file), past, past);
  const older = new Date(past.getTime() - 60_000);
  for (const file of ['src/answer.ts', 'src/other.ts', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) utimesSync(join(dir, file), older, older);
  build();
  assert.ok(Math.abs(statSync(join(dir, 'dist/answer.js')).mtimeMs - past.getTime()) < 1000, 'nothing changed: not compiled again');

  writeFileSync(join(dir, 'src/answer.ts'), 'export const answer: number = 2;\n');
  build();
  assert.match(readFileSync(join(dir, 'dist/answer.js'), 'utf8'), /answer = 2/, 'a changed source is compiled again');
});
