// GitHub's secret scanning public keys (src/http/secret-scanning/github-public-keys.ts), fetched from a
// local stand-in for api.github.com: read once and kept; an unknown identifier reads the document again
// once, and no more than once a minute; a document that cannot be read, or holds no P-256 key, fails closed
// unless a good copy is held; a file is read again at once.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GitHubPublicKeys, parsePublicKeys, PublicKeysUnavailableError } from '../../src/http/secret-scanning/github-public-keys.js';

const pem = (curve: string) => generateKeyPairSync('ec', { namedCurve: curve }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
const doc = (ids: string[]) => JSON.stringify({ public_keys: ids.map((id, i) => ({ key_identifier: id, key: pem('P-256'), is_current: i === 0 })) });

let server: Server;
let base = '';
let served = doc(['a']);
let status = 200;
let fetches = 0;

before(async () => {
  server = createServer((request, response) => {
    fetches += 1;
    assert.match(request.headers['user-agent'] ?? '', /shelfapi/);
    response.writeHead(status, { 'content-type': 'application/json' }).end(served);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/keys`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('GitHubPublicKeys from a URL', () => {
  test('read once and kept; an unknown identifier reads again once, at most once a minute', async () => {
    let now = 1_000_000;
    const keys = new GitHubPublicKeys({ url: base }, () => now);
    fetches = 0;
    assert.ok(await keys.keyFor('a'));
    assert.ok(await keys.keyFor('a'));
    assert.equal(fetches, 1);
    served = doc(['a', 'b']);
    // Within the minute after the first read: no second read, so 'b' is not known yet.
    assert.equal(await keys.keyFor('b'), null);
    assert.equal(fetches, 1);
    now += 60_000;
    assert.ok(await keys.keyFor('b'), 'read again for an unknown identifier');
    assert.equal(fetches, 2);
    assert.equal(await keys.keyFor('made-up'), null);
    assert.equal(fetches, 2, 'not again within the minute');
  });

  test('fails closed when the document cannot be read and no copy is held; keeps a good copy otherwise', async () => {
    let now = 5_000_000;
    status = 500;
    const keys = new GitHubPublicKeys({ url: base }, () => now);
    await assert.rejects(keys.keyFor('a'), PublicKeysUnavailableError);
    await assert.rejects(keys.keyFor('a'), PublicKeysUnavailableError, 'not tried again at once');
    status = 200;
    served = doc(['a']);
    now += 60_000;
    assert.ok(await keys.keyFor('a'));
    status = 500;
    now += 25 * 3_600_000;
    assert.ok(await keys.keyFor('a'), 'the copy held serves while GitHub answers 500');
    status = 200;
  });
});

describe('the document', () => {
  test('only P-256 keys are used; a document with none, or not the documented shape, is refused', () => {
    const mixed = JSON.stringify({ public_keys: [{ key_identifier: 'p384', key: pem('P-384') }, { key_identifier: 'ok', key: pem('P-256') }, { key_identifier: 'junk', key: 'x' }] });
    assert.deepEqual([...parsePublicKeys(mixed).keys()], ['ok']);
    assert.throws(() => parsePublicKeys(JSON.stringify({ public_keys: [{ key_identifier: 'p384', key: pem('P-384') }] })), /no usable/);
    assert.throws(() => parsePublicKeys('[]'), /public_keys/);
    assert.throws(() => parsePublicKeys('not json'));
  });

  test('a file is read again at once for an unknown identifier', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shelfapi-gh-keys-'));
    try {
      const file = join(dir, 'keys.json');
      writeFileSync(file, doc(['a']));
      const keys = new GitHubPublicKeys({ file });
      assert.equal(await keys.keyFor('b'), null);
      writeFileSync(file, doc(['a', 'b']));
      assert.ok(await keys.keyFor('b'));
      await assert.rejects(new GitHubPublicKeys({ file: join(dir, 'missing.json') }).keyFor('a'), PublicKeysUnavailableError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
