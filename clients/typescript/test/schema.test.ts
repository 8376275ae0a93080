/**
 * The committed types are what openapi-typescript makes of the committed openapi.json, checked by the
 * generator itself (`--check`), the same way test/http/openapi.test.ts checks openapi.json against the code.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const CLIENT = fileURLToPath(new URL('..', import.meta.url));
const GENERATOR = join(CLIENT, '../../node_modules/openapi-typescript/bin/cli.js');

test('src/schema.ts is what openapi.json generates (regenerate: npm run openapi, or npm run generate -w @shelfapi/client)', () => {
  const result = spawnSync(process.execPath, [GENERATOR, '../../openapi.json', '--output', 'src/schema.ts', '--check'], {
    cwd: CLIENT,
    encoding: 'utf8',
  });
  assert.equal(
    result.status,
    0,
    `clients/typescript/src/schema.ts is stale: run \`npm run generate -w @shelfapi/client\`\n${result.stdout}${result.stderr}`,
  );
});
