// The rules a new key is held to (docs/contract.md, "Keys"), as the settings screen and the command line share
// them: names, scopes, expiry choices and dates, at most so many live keys, and a lapsed account that may view
// and revoke but not create or roll. Runs on both stores.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OPERATOR } from '../../src/services/actor.js';
import { InputError, InputErrors } from '../../src/errors/input-error.js';
import { createKey, MAX_LIVE_KEYS, revokeKey, rollKey } from '../../src/services/keys.service.js';
import { expiresAtFor, expiryDateRange } from '../../src/services/key-expiry.js';
import { validateKeyName } from '../../src/services/key-fields.js';
import { accountKeys } from '../../src/services/key-lookup.js';
import { keyIdOf } from '../helpers/pipeline-helpers.js';
import { alice, bob, call, carol, create, ctx, keyCount, now, owner, prefix, refused, useKeysContext } from './keys-fixtures.js';

useKeysContext();

describe('names, scopes, expiry', () => {
  it('validateKeyName trims and takes 1 to 64 characters (counted as characters, not bytes)', () => {
    assert.equal(validateKeyName('  deploy  '), 'deploy');
    assert.equal(validateKeyName('é'.repeat(64)), 'é'.repeat(64));
    assert.throws(() => validateKeyName('   '), (e: unknown) => e instanceof InputError && e.field === 'name');
    assert.throws(() => validateKeyName('x'.repeat(65)), (e: unknown) => e instanceof InputError && e.field === 'name' && /64/.test(e.message));
  });

  it('createKey refuses a bad name, no scope, an unknown scope, a past or malformed expiry, each at its field, writing nothing', async () => {
    const before = await keyCount();
    await refused(create(''), 'name', /name/);
    await refused(create('x'.repeat(65)), 'name', /64/);
    await refused(create('ok', []), 'scopes', /at least one scope/);
    await refused(create('ok', ['catalogue:write']), 'scopes', /catalogue:write/);
    await refused(create('ok', ['export'], { expiresAt: '2020-01-01T00:00:00Z' }), 'expiry', /future/);
    await refused(create('ok', ['export'], { expiresAt: 'tomorrow' }), 'expiry', /ISO 8601/);
    assert.equal(await keyCount(), before);
  });

  it('a name is unique among the live keys only: the name of a revoked or expired key can be taken again', async () => {
    await refused(create('second key'), 'name', /already named "second key"/);
    await refused(create('  second key '), 'name', /already named/);
    const again = await create('revoked', ['export']);
    assert.equal(again.record.name, 'revoked');
    const expiredName = await create('expired', ['export']);
    assert.equal(expiredName.record.name, 'expired');
    // Another account may use any name.
    const bobs = await create('second key', ['export'], { accountId: bob, actor: OPERATOR });
    assert.equal(bobs.record.accountId, bob);
  });

  it('expiry choices: 7, 30, 90 days, 1 year, none; anything else refused at the expiry field', () => {
    const t = Date.parse('2026-11-20T12:00:00.000Z');
    assert.equal(expiresAtFor('7d', t), '2026-11-27T12:00:00.000Z');
    assert.equal(expiresAtFor('90d', t), '2027-02-18T12:00:00.000Z');
    assert.equal(expiresAtFor('1y', t), '2027-11-20T12:00:00.000Z');
    assert.equal(expiresAtFor('never', t), null);
    assert.throws(() => expiresAtFor('2d', t), (e: unknown) => e instanceof InputError && e.field === 'expiry');
  });

  it('expiresAtFor, the one expiry rule of the screen and the command line: nothing given is 90 days, "never", a plain date is the end of that day UTC', () => {
    const t = Date.parse('2026-11-20T12:00:00.000Z');
    assert.equal(expiresAtFor(undefined, t), '2027-02-18T12:00:00.000Z');
    assert.equal(expiresAtFor('', t), '2027-02-18T12:00:00.000Z');
    assert.equal(expiresAtFor('never', t), null);
    assert.equal(expiresAtFor('2027-01-31', t), '2027-01-31T23:59:59.999Z');
    assert.equal(expiresAtFor('2026-11-20', t), '2026-11-20T23:59:59.999Z', 'today: until its end');
    assert.equal(expiresAtFor('2027-01-31T10:00:00+01:00', t), '2027-01-31T09:00:00.000Z');
    const refusedExpiry = (input: string, pattern: RegExp) =>
      assert.throws(() => expiresAtFor(input, t), (e: unknown) => e instanceof InputError && e.field === 'expiry' && pattern.test(e.message), input);
    refusedExpiry('2026-11-19', /must be in the future/);
    refusedExpiry('2026-11-20T11:59:59Z', /must be in the future/);
    for (const bad of ['2027-02-30', '2027-1-31', '31/01/2027', 'tomorrow', 'none', '10d']) refusedExpiry(bad, /Expiry must be one of 7d, 30d, 90d, 1y, never, a date/);
  });

  it('a date or date-time is at most a year away (to the end of the same date next year), for the screen\'s date field and --expires-at alike', () => {
    const t = Date.parse('2026-11-20T12:00:00.000Z');
    assert.deepEqual(expiryDateRange(t), { first: '2026-11-20', last: '2027-11-20' });
    assert.equal(expiresAtFor('2027-11-20', t), '2027-11-20T23:59:59.999Z', 'the last day');
    assert.equal(expiresAtFor({ date: '2027-11-20' }, t), '2027-11-20T23:59:59.999Z');
    assert.equal(expiresAtFor({ date: ' 2026-11-20 ' }, t), '2026-11-20T23:59:59.999Z', 'today, trimmed');
    assert.equal(expiresAtFor('2027-11-20T23:59:59Z', t), '2027-11-20T23:59:59.000Z');
    const refused = (input: string | { date: string }, pattern: RegExp) =>
      assert.throws(() => expiresAtFor(input, t), (e: unknown) => e instanceof InputError && e.field === 'expiry' && pattern.test(e.message), JSON.stringify(input));
    refused('2027-11-21', /at most a year away: 2027-11-20 at the latest/);
    refused('2027-11-21T00:00:00Z', /at most a year away/);
    refused('2099-01-31', /at most a year away/);
    refused({ date: '2027-11-21' }, /at most a year away/);
    refused({ date: '2026-11-19' }, /must be in the future/);
    refused({ date: '' }, /Choose the date the key expires on/);
    for (const bad of ['2027-02-30', '31/01/2027', '2027-01-31T10:00:00Z', 'never', '7d']) refused({ date: bad }, /Give the date as year-month-day, such as 2027-01-31/);
    // 29 February: a year on is 28 February; "1y" (365 days) always falls within the range.
    const leap = Date.parse('2028-02-29T18:00:00.000Z');
    assert.deepEqual(expiryDateRange(leap), { first: '2028-02-29', last: '2029-02-28' });
    assert.equal(expiresAtFor('1y', leap), '2029-02-28T18:00:00.000Z');
    assert.deepEqual(expiryDateRange(Date.parse('2027-03-01T00:00:00.000Z')), { first: '2027-03-01', last: '2028-03-01' });
    assert.equal(expiresAtFor('1y', Date.parse('2027-03-01T23:59:59.999Z')), '2028-02-29T23:59:59.999Z');
  });

  it('createKey: no expiry given makes a 90-day key; every bad field is reported at once, writing nothing', async () => {
    const made = await createKey(ctx.store, { accountId: alice, name: 'ninety', scopes: ['export'], expiresAt: undefined, now: now(), keyPrefix: prefix(), actor: owner });
    assert.equal(made.record.expiresAt, new Date(now() + 90 * 86_400_000).toISOString());
    const before = await keyCount();
    await assert.rejects(create('', [], { expiresAt: 'soon' }), (error: unknown) => {
      assert.ok(error instanceof InputErrors, String(error));
      assert.deepEqual(error.errors.map((e) => e.field), ['name', 'scopes', 'expiry']);
      assert.match(error.message, /Give the key a name\. Choose at least one scope\. Expiry must be one of/);
      return true;
    });
    await assert.rejects(create('second key', ['admin']), (error: unknown) => {
      assert.ok(error instanceof InputErrors, String(error));
      assert.deepEqual(error.errors.map((e) => [e.field, e.message.slice(0, 20)]), [['scopes', 'unknown scope admin '], ['name', 'A live key is alread']]);
      return true;
    });
    assert.equal(await keyCount(), before);
  });

  it('a created key works at once with exactly its scopes, stored with the trimmed name and scopes in contract order', async () => {
    const made = await create('  scripted  ', ['prices:read', 'catalogue:read']);
    assert.equal(made.record.name, 'scripted');
    assert.deepEqual(made.record.scopes, ['catalogue:read', 'prices:read']);
    assert.equal((await call('/catalogue/1', made.key)).statusCode, 200);
    assert.equal((await call('/collection', made.key)).statusCode, 403);
  });
});

describe('limits and plan', () => {
  it(`at most ${MAX_LIVE_KEYS} live keys; revoked keys do not count; the refusal writes nothing`, async () => {
    const dave = await ctx.store.db
      .insertInto('accounts')
      .values({ email: 'limit@example.com', plan: 'enthusiast', plan_status: 'active', created_at: new Date(now()).toISOString() })
      .returning('id')
      .executeTakeFirstOrThrow();
    const made = [];
    for (let i = 1; i <= MAX_LIVE_KEYS; i++) made.push(await create(`k${i}`, ['export'], { accountId: dave.id, actor: OPERATOR }));
    const before = await keyCount();
    await refused(create('one more', ['export'], { accountId: dave.id, actor: OPERATOR }), null, /at most 20 live keys/);
    assert.equal(await keyCount(), before);
    await revokeKey(ctx.store, { keyId: made[0]!.id, now: now(), keyPrefix: prefix(), actor: OPERATOR });
    const replacement = await create('one more', ['export'], { accountId: dave.id, actor: OPERATOR });
    assert.equal(replacement.record.name, 'one more');
  });

  it('a lapsed account can view and revoke, not create or roll', async () => {
    const carolKey = await keyIdOf(ctx, 'carol');
    await refused(create('new', ['export'], { accountId: carol, actor: OPERATOR }), null, /not active/);
    await refused(rollKey(ctx.store, { keyId: carolKey, stopOld: 'now', now: now(), keyPrefix: prefix(), actor: OPERATOR }), null, /not active/);
    assert.ok((await accountKeys(ctx.store, ctx.meter, carol, now())).length > 0);
    const revoked = await revokeKey(ctx.store, { keyId: carolKey, accountId: carol, now: now(), keyPrefix: prefix(), actor: { kind: 'owner', accountId: carol, address: null } });
    assert.notEqual(revoked.revokedAt, null);
  });
});
