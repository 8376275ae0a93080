import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from '../../src/cli/openapi-document.js';
import { ERROR_STATUS } from '../../src/http/errors.js';

const committed = readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8');

test('the committed openapi.json is what the code generates (regenerate: npm run openapi)', async () => {
  assert.equal(await buildOpenApiDocument(), committed, 'openapi.json is stale: run `npm run build && npm run openapi`');
});

test('the document describes every endpoint, its parameters, statuses and headers', () => {
  const doc = JSON.parse(committed) as {
    openapi: string;
    paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }>; responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, unknown> }> }>>;
    info: { description: string };
  };
  assert.match(doc.openapi, /^3\.1\./);
  const endpoints = [
    '/me', '/catalogue', '/catalogue/{id}', '/prices', '/prices/export.csv', '/prices/{masterItemId}',
    '/collection', '/collection/value', '/collection/{id}', '/listings', '/offers', '/transactions',
  ];
  assert.deepEqual(Object.keys(doc.paths).sort(), endpoints.map((e) => `/developer/v1${e}`).sort());
  const catalogue = doc.paths['/developer/v1/catalogue']!.get!;
  assert.deepEqual(
    catalogue.parameters!.map((p) => `${p.in}:${p.name}`).sort(),
    ['header:if-none-match', 'query:category', 'query:limit', 'query:offset', 'query:platform', 'query:search', 'query:upc'],
  );
  assert.deepEqual(Object.keys(catalogue.responses).sort(), ['200', '304', '400', '401', '403', '429', '500', '503']);
  assert.ok(catalogue.responses['200']!.headers!['X-RateLimit-Remaining']);
  assert.ok(catalogue.responses['200']!.headers!['ETag']);
  assert.equal(catalogue.responses['304']!.content, undefined, 'a 304 has no body');
  assert.ok(catalogue.responses['429']!.headers!['Retry-After']);
  assert.deepEqual(Object.keys(doc.paths['/developer/v1/catalogue/{id}']!.get!.responses).sort(), ['200', '304', '400', '401', '403', '404', '429', '500', '503']);
  assert.ok(doc.paths['/developer/v1/prices/export.csv']!.get!.responses['200']!.content!['text/csv']);
  // /me is never quota-limited: no quota_exceeded among its documented answers.
  assert.doesNotMatch(JSON.stringify(doc.paths['/developer/v1/me']!.get!.responses['429']), /quota_exceeded/);
  for (const code of Object.keys(ERROR_STATUS)) assert.match(doc.info.description, new RegExp(`\`${code}\``));
});

test('every operation has an operationId named after its endpoint, the names the clients use', () => {
  const doc = JSON.parse(committed) as { paths: Record<string, Record<string, { operationId?: string }>> };
  const ids = Object.fromEntries(Object.entries(doc.paths).map(([path, item]) => [path.replace('/developer/v1', ''), item.get?.operationId]));
  assert.deepEqual(ids, {
    '/me': 'me',
    '/catalogue': 'catalogue',
    '/catalogue/{id}': 'catalogueItem',
    '/prices': 'prices',
    '/prices/export.csv': 'exportPrices',
    '/prices/{masterItemId}': 'price',
    '/collection': 'collection',
    '/collection/value': 'collectionValue',
    '/collection/{id}': 'collectionItem',
    '/listings': 'listings',
    '/offers': 'offers',
    '/transactions': 'transactions',
  });
});

test("Redocly's recommended lint finds openapi.json valid without a warning", () => {
  const cli = fileURLToPath(new URL('../../node_modules/@redocly/cli/bin/cli.js', import.meta.url));
  const result = spawnSync(process.execPath, [cli, 'lint', 'openapi.json', '--extends=recommended', '--format=json'], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    encoding: 'utf8',
    // Its update check and telemetry would reach out to the network.
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  const report = JSON.parse(result.stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string }> };
  const problems = report.problems.map((p) => `${p.ruleId}: ${p.message}`);
  assert.deepEqual(problems, [], `redocly lint openapi.json:\n${problems.join('\n')}`);
  assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
  assert.equal(result.status, 0, result.stderr);
});

test('the description\'s "Order of checks" has ten steps, one list item a line (Swagger UI renders each line "N. ..." as an item)', () => {
  const doc = JSON.parse(committed) as { info: { description: string } };
  const section = /## Order of checks\n([\s\S]*?)\n## /.exec(doc.info.description)?.[1];
  assert.ok(section, 'the section is there');
  const items = section.split('\n').filter((line) => /^[0-9]+\. /.test(line));
  assert.deepEqual(items.map((line) => Number(/^([0-9]+)\./.exec(line)![1])), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  for (const item of items) assert.doesNotMatch(item.replace(/^[0-9]+\. /, ''), /(^|\s)[0-9]+\. [A-Z]/, `one step a line: ${item}`);
});
