// Issue 40, item 1: redactKeys finds a key's secret without its prefix (43 base62 characters and their
// CRC-32 checksum, which is computed rolling along a run), however it is encoded or split.
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import { describe, it } from 'node:test';
import { checksum, generateKey, KEY_PATTERN, redactKeys } from '../../src/keys/api-key.js';
import { recogniseSecretsOf, secretStarts } from '../../src/keys/secret-scan.js';

const secretOf = (key: string) => key.slice(key.indexOf('_live_') + '_live_'.length);

describe('a secret without its prefix', () => {
  const key = generateKey('shelf');
  const secret = secretOf(key);
  const [head, tail] = [secret.slice(0, 20), secret.slice(20)];

  it('is found by its checksum, alone or inside a longer run, and nothing else is', () => {
    assert.deepEqual(secretStarts(secret), [0]);
    assert.deepEqual(secretStarts(`ab${secret}cd`), [2]);
    assert.deepEqual(secretStarts(`${secret}${secret}`), [0, 49]);
    assert.deepEqual(secretStarts(`${secret.slice(0, -1)}${secret.at(-1) === 'A' ? 'B' : 'A'}`), []);
    assert.deepEqual(secretStarts(secret.slice(1)), []);
    // The rolling checksum is zlib's, for every position of a long run.
    const run = Array.from({ length: 8 }, () => secretOf(generateKey('shelf'))).join('');
    assert.deepEqual(secretStarts(run), [0, 49, 98, 147, 196, 245, 294, 343]);
    assert.equal(checksum(`shelf_live_${secret.slice(0, 43)}`), secret.slice(43));
    assert.equal(crc32(`shelf_live_${secret.slice(0, 43)}`).toString(), String(crc32(`shelf_live_${secret.slice(0, 43)}`)));
  });

  it('is redacted wherever it is written, and only it', () => {
    const cases: Array<[string, string]> = [
      [`/developer/v1/catalogue/${secret}`, '/developer/v1/catalogue/[redacted]'],
      [`/catalogue?search=${secret}&limit=5`, '/catalogue?search=[redacted]&limit=5'],
      [`/catalogue?foo=_${secret}`, '/catalogue?foo=_[redacted]'],
      [`/catalogue?q=x${secret}y`, '/catalogue?q=x[redacted]y'],
      [`/catalogue/${head}%0A${tail}`, '/catalogue/[redacted]'],
      [`/catalogue/${head}%250a${tail}`, '/catalogue/[redacted]'],
      [`/catalogue/${head}%C2%85${tail}`, '/catalogue/[redacted]'],
      [`got "${head}\n${tail}".`, 'got "[redacted]".'],
      [`got "${head}\u0085${tail}".`, 'got "[redacted]".'],
      [`{"message":"got \\"${head}\\\\n${tail}\\"."}`, '{"message":"got \\"[redacted]\\"."}'],
      [`{"url":"/c/${head}\\u0000${tail}"}`, '{"url":"/c/[redacted]"}'],
      [`/c/${[...secret].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}?a=%20b`, '/c/[redacted]?a=%20b'],
      [`/c/${key}`, '/c/[redacted]'],
      [`/c/${key.replace('_live_', '%5Flive%5F')}`, '/c/[redacted]'],
      [`/c/${secret}/${secret}`, '/c/[redacted]/[redacted]'],
      ['/developer/v1/catalogue/1?search=a%20b%0Ac', '/developer/v1/catalogue/1?search=a%20b%0Ac'],
      [`/c/${'a'.repeat(5000)}`, `/c/${'a'.repeat(5000)}`],
    ];
    for (const [text, redacted] of cases) assert.equal(redactKeys(text), redacted, text);
  });

  it('is found wherever it starts and wherever it is split (a first look skips most of a text)', () => {
    for (let at = 0; at < 60; at++) {
      const before = `"a":${'-'.repeat(at)}`;
      assert.equal(redactKeys(`${before}${secret}-"`), `${before}[redacted]-"`, `at ${at}`);
      const split = Math.min(at, 47) + 1;
      assert.equal(redactKeys(`${before}${secret.slice(0, split)}%0A${secret.slice(split)}\n`), `${before}[redacted]\n`, `split at ${split}`);
    }
  });

  it("is found for the prefix a server is configured with", () => {
    const other = secretOf(generateKey('acme'));
    assert.equal(redactKeys(`/c/${other}`), `/c/${other}`, 'not recognised before');
    recogniseSecretsOf('acme');
    assert.equal(redactKeys(`/c/${other}`), '/c/[redacted]');
  });
});

describe('a key with its prefix, or with live_ and no prefix', () => {
  const key = generateKey('shelf');
  it('is redacted from its prefix on, as KEY_PATTERN matches it', () => {
    const cases: Array<[string, string]> = [
      [`/c/${key}`, '/c/[redacted]'],
      [`/c/_${key.slice(6)}`, '/c/_[redacted]'],
      [`/c/${key.slice(6)}`, '/c/[redacted]'],
      [`/c/9${key}`, '/c/9[redacted]'],
      [`/c/abcdefghijklmnopqr_live_${'a'.repeat(20)}`, '/c/ab[redacted]'],
      [`/c/x_live_${'a'.repeat(20)}`, '/c/x_[redacted]'],
      [`/c/live_${'a'.repeat(19)}`, `/c/live_${'a'.repeat(19)}`],
      [`/c/${'live_'.repeat(3)}${'a'.repeat(20)}`, '/c/live_[redacted]'],
    ];
    for (const [text, redacted] of cases) {
      assert.equal(redactKeys(text), redacted, text);
      assert.equal(text.replace(KEY_PATTERN, '[redacted]'), redacted, `KEY_PATTERN: ${text}`);
    }
  });
});
