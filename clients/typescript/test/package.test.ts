/**
 * The README's first script, taken from the README itself, in a project outside the checkout that has
 * the built package installed (a link, as `npm install <checkout>/clients/typescript` makes): it must
 * typecheck against dist's declarations and list a catalogue page from a live server. Needs the client
 * built (`npm run test:client` builds it first).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startLiveServer, type LiveServer } from './live-server.js';

const CLIENT = fileURLToPath(new URL('..', import.meta.url));
const ROOT = join(CLIENT, '../..');

/** The first ```ts block after the README's "A first script" heading. */
function firstScript(): string {
  const readme = readFileSync(join(CLIENT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A first script'));
  const match = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(match, 'the README has a first script');
  return match[1]!;
}

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe("the README's first script, in a project of its own", () => {
  let live: LiveServer;
  let project: string;

  before(async () => {
    assert.ok(existsSync(join(CLIENT, 'dist/index.js')), 'the client is built: run `npm run build -w @shelfapi/client`');
    live = await startLiveServer();
    project = mkdtempSync(join(tmpdir(), 'shelfapi-client-user-'));
    mkdirSync(join(project, 'node_modules/@shelfapi'), { recursive: true });
    symlinkSync(CLIENT, join(project, 'node_modules/@shelfapi/client'), 'dir');
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user-project', private: true, type: 'module' }));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true,
          types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        include: ['*.ts'],
      }),
    );
    writeFileSync(join(project, 'list-catalogue.ts'), firstScript());
  });
  after(async () => {
    await live?.stop();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  test('typechecks against the built declarations', async () => {
    const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], project);
    assert.equal(tsc.code, 0, tsc.out);
  });

  test('lists a catalogue page', async () => {
    const tsx = import.meta.resolve('tsx');
    const result = await run(process.execPath, ['--import', tsx, 'list-catalogue.ts'], project, {
      SHELF_API_KEY: live.keys.main!,
      SHELF_API_URL: live.origin,
    });
    assert.equal(result.code, 0, result.out);
    // Item 3's name holds a line break, so the output is matched as a whole rather than line by line.
    assert.match(result.out, /^1\tItem 01\tNintendo 64\t1981\n2\tItem 02\tNES\t1982\n3\tPokémon, "Gold" Edition\nLimited\tNintendo 64\t1983\n4\tItem 04\tNES\tyear unknown\n6\tItem 06\tNES\t1986\n25 published items in all\n$/);
  });
});
