// The operator command line `shelfapi` (docs/contract.md, "Operator command line"), run as an operator runs it: a child process
// per command, configured by the environment, writing to an SQLite file. This file: help, migrate, openapi,
// meter upgrade-keys and usage errors; accounts and keys, and loading, have files of their own (each file
// stays well inside the per-file time limit on a loaded machine).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { migrationNames } from '../../src/store/database.js';
import { existsSync } from 'node:fs';
import {
  assertRefused,
  parseJsonOutput,
  runCli,
  runClis,
  type CliResult,
  cliWorkspace,
  isRecord,
} from '../helpers/cli-helpers.js';

const { tmp } = cliWorkspace();

describe('--help on every command and subcommand', () => {
  const db = tmp.db('help');
  const commands: Array<{ path: string[]; json: boolean }> = [
    { path: [], json: false },
    { path: ['serve'], json: false },
    { path: ['migrate'], json: true },
    { path: ['seed'], json: true },
    { path: ['load'], json: true },
    { path: ['accounts'], json: false },
    { path: ['accounts', 'create'], json: true },
    { path: ['accounts', 'set-plan'], json: true },
    { path: ['accounts', 'log'], json: true },
    { path: ['keys'], json: false },
    { path: ['keys', 'create'], json: true },
    { path: ['keys', 'list'], json: true },
    { path: ['keys', 'revoke'], json: true },
    { path: ['keys', 'revoke-leaked'], json: true },
    { path: ['keys', 'roll'], json: true },
    { path: ['keys', 'rename'], json: true },
    { path: ['keys', 'set-scopes'], json: true },
    { path: ['keys', 'set-allowed-ips'], json: true },
    { path: ['keys', 'usage'], json: true },
    { path: ['import'], json: false },
    { path: ['import', 'prices'], json: true },
    { path: ['notices'], json: true },
    { path: ['meter'], json: false },
    { path: ['meter', 'upgrade-keys'], json: true },
    { path: ['openapi'], json: false },
  ];
  const results = new Map<string, CliResult>();

  before(async () => {
    // Independent processes: run them side by side.
    const all = await runClis(commands.map((c) => ({ args: [...c.path, '--help'], env: { DATABASE_URL: db } })));
    commands.forEach((c, i) => results.set(c.path.join(' '), all[i]!));
  });

  for (const command of commands) {
    const name = ['shelfapi', ...command.path].join(' ');
    it(`${name} --help exits 0 and prints its usage on stdout`, () => {
      const result = results.get(command.path.join(' '))!;
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, '');
      assert.ok(result.stdout.startsWith(`Usage: ${name} `), result.stdout);
      assert.match(result.stdout, /-h, --help/);
      if (command.json) assert.match(result.stdout, /--json/, `${name} documents --json`);
    });
  }

  it('--help touches no store', () => {
    assert.equal(existsSync(db), false);
  });
});

describe('meter upgrade-keys', () => {
  it('without REDIS_URL: refused, saying only a single Redis holds the old key names', async () => {
    const result = await runCli(['meter', 'upgrade-keys'], { DATABASE_URL: tmp.db('upgrade-keys') });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, 'shelfapi: REDIS_URL is not set: only a single Redis can hold counts under the old key names\n');
  });
});

describe('migrate', () => {
  const db = tmp.db('migrate');

  it('on a new store applies the migrations and says which (--json)', async () => {
    const out = parseJsonOutput(await runCli(['migrate', '--json'], { DATABASE_URL: db }));
    assert.deepEqual(out, { applied: migrationNames('sqlite') });
    assert.equal(migrationNames('sqlite')[0], '0001-initial');
  });

  it('again: nothing to apply, exit 0 (file: form of DATABASE_URL)', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: `file:${db}` });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /up to date/);
  });
});

describe('openapi', () => {
  it('prints the OpenAPI 3.1 document as one JSON document', async () => {
    const out = parseJsonOutput(await runCli(['openapi'], { DATABASE_URL: tmp.db('openapi') }));
    assert.ok(isRecord(out));
    assert.match(String(out.openapi), /^3\.1\.\d+$/);
    assert.ok(isRecord(out.paths));
    const paths = Object.keys(out.paths);
    for (const p of ['/me', '/catalogue', '/prices/export.csv', '/transactions']) {
      assert.ok(paths.some((path) => path.endsWith(p)), `documents ${p}: ${paths.join(', ')}`);
    }
    assert.equal(existsSync(tmp.db('openapi')), false, 'openapi needs no store');
  });
});

describe('usage errors', () => {
  const db = tmp.db('errors');
  const env = { DATABASE_URL: db };

  it('an unknown command, an unknown option, an extra argument: non-zero exit, one line on stderr', async () => {
    const [command, option, extra] = await Promise.all([
      runCli(['frobnicate'], env),
      runCli(['accounts', 'create', '--email', 'x@example.com', '--plan', 'addon', '--colour', 'red'], env),
      runCli(['migrate', 'now'], env),
    ]);
    assertRefused(command, /unknown command 'frobnicate'/);
    assertRefused(option, /unknown option '--colour'/);
    assertRefused(extra, /too many arguments/);
    for (const r of [command, option, extra]) assert.equal(r.code, 2, 'a usage error exits 2');
    assert.equal(existsSync(db), false, 'nothing was written');
  });

  it('a command group without its subcommand is a usage error: non-zero exit, usage on stderr, nothing on stdout', async () => {
    const result = await runCli(['keys'], env);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /Usage: shelfapi keys /);
  });

  it('a bad PLAN_LIMITS is refused before anything is written, naming the variable', async () => {
    const result = await runCli(['accounts', 'create', '--email', 'x@example.com', '--plan', 'addon'], { ...env, PLAN_LIMITS: '{"gold":{"monthly":5}}' });
    assertRefused(result, /^shelfapi: PLAN_LIMITS: /);
    assert.equal(existsSync(db), false, 'nothing was written');
  });
});
