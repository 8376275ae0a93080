/**
 * The command line loads only the command it runs (src/cli/main.ts): the path named on the command line,
 * or every command for help on the program or a group and for a name it does not know (commander's own
 * help and suggestions then list them all).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { commandsFor } from '../../src/cli/main.js';

const paths = (argv: string[]) => commandsFor(argv).map(({ path }) => path.join(' '));
const ALL = paths([]);

test('a command and its arguments load that command alone', () => {
  assert.deepEqual(paths(['keys', 'rename', '5', 'new name']), ['keys rename']);
  assert.deepEqual(paths(['serve', '--workers', '2']), ['serve']);
  assert.deepEqual(paths(['--json', 'keys', 'list', '--account', '3']), ['keys list'], 'options are not names');
  assert.deepEqual(paths(['accounts', 'log', '--help']), ['accounts log']);
});

test('no command, a whole group, or a name not known: every command, so that help and suggestions list them all', () => {
  assert.ok(ALL.length >= 20 && ALL.includes('keys rename') && ALL.includes('serve'));
  assert.deepEqual(paths(['--help']), ALL);
  assert.deepEqual(paths(['keys']), ALL);
  assert.deepEqual(paths(['keys', 'renam']), ALL);
  assert.deepEqual(paths(['serv']), ALL);
});

test('each command loaded by its path is named as its path says (so commander finds it)', async () => {
  for (const { path, load } of commandsFor([])) assert.equal((await load()).name(), path.at(-1), path.join(' '));
});
