// The key services the settings screen and the command line share (docs/contract.md, "Keys"): the rules for names,
// scopes, expiry and limits, roll, rename, scope changes and revoke as the API then answers them, another
// account's key read as missing, and every change in the owner's security log. Runs on both stores.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { changePlan } from '../../src/services/accounts.service.js';
import { OPERATOR, type Actor } from '../../src/services/actor.js';
import { InputError, InputErrors, NotFoundError, type InputField } from '../../src/errors/input-error.js';
import { createKey, MAX_LIVE_KEYS, renameKey, revokeKey, rollKey, setKeyScopes } from '../../src/services/keys.service.js';
import { expiresAtFor, expiryDateRange } from '../../src/services/key-expiry.js';
import { validateKeyName } from '../../src/services/key-fields.js';
import { accountKeys, ownedKey } from '../../src/services/key-lookup.js';
import { listSecurityEvents } from '../../src/services/security-log.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { keyHint } from '../../src/keys/api-key.js';
import { keyStatus } from '../../src/keys/key-status.js';
import { keyIdOf, nextWindow } from '../helpers/pipeline-helpers.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

let ctx: TestContext;
let alice: number;
let bob: number;
let carol: number;
let owner: Actor;

before(async () => {
  ctx = await createTestContext();
  alice = ctx.loaded.accounts.alice!;
  bob = ctx.loaded.accounts.bob!;
  carol = ctx.loaded.accounts.carol!;
  owner = { kind: 'owner', accountId: alice, address: '203.0.113.7' };
});
after(async () => {
  await ctx.close();
});
beforeEach(() => nextWindow(ctx));

const prefix = () => ctx.config.keyPrefix;
const now = () => ctx.clock.now();

/** Asserts the promise fails with an InputError at `field` whose message matches. */
async function refused(promise: Promise<unknown>, field: InputField, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof InputError, `InputError expected, got ${String(error)}`);
    assert.equal(error.field, field, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

async function keyCount(): Promise<number> {
  const row = await ctx.store.db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** GET with a full key (created by a test), through the real pipeline. */
function call(path: string, key: string) {
  return ctx.get(`${V1}${path}`, null, { headers: { 'x-api-key': key } });
}

const create = (name: string, scopes: readonly string[] = ['catalogue:read'], extra: { accountId?: number; expiresAt?: string | null; actor?: Actor } = {}) =>
  createKey(ctx.store, {
    accountId: extra.accountId ?? alice,
    name,
    scopes,
    expiresAt: extra.expiresAt ?? null,
    now: now(),
    keyPrefix: prefix(),
    actor: extra.actor ?? owner,
  });

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

describe('another account', () => {
  it("another account's key is NotFoundError, exactly as a missing id, and nothing changes", async () => {
    const bobKey = await keyIdOf(ctx, 'bob');
    const missing = 987_654;
    for (const keyId of [bobKey, missing]) {
      const asAlice = { keyId, accountId: alice, now: now(), keyPrefix: prefix(), actor: owner };
      const expected = { name: 'NotFoundError', message: `key ${keyId} does not exist` };
      await assert.rejects(ownedKey(ctx.store, alice, keyId), expected);
      await assert.rejects(renameKey(ctx.store, { ...asAlice, name: 'mine now' }), expected);
      await assert.rejects(setKeyScopes(ctx.store, { ...asAlice, scopes: ['export'] }), expected);
      await assert.rejects(rollKey(ctx.store, { ...asAlice, stopOld: 'now' }), expected);
      await assert.rejects(revokeKey(ctx.store, asAlice), expected);
    }
    const bobRecord = await ownedKey(ctx.store, bob, bobKey);
    assert.equal(bobRecord.name, 'all scopes');
    assert.equal(bobRecord.revokedAt, null);
    assert.equal((await ctx.get(`${V1}/me`, 'bob')).statusCode, 200);
    assert.ok(new NotFoundError('x') instanceof Error);
  });
});

describe('roll', () => {
  it('the new key\'s expiry as asked (a date, a lifetime, never) or the old key\'s lifetime; a bad stop time and expiry are refused at once, writing nothing', async () => {
    const start = now();
    const old = await createKey(ctx.store, { accountId: alice, name: 'dated roll', scopes: ['export'], expiresAt: '30d', now: start, keyPrefix: prefix(), actor: owner });
    const before = await keyCount();
    await assert.rejects(rollKey(ctx.store, { keyId: old.id, accountId: alice, stopOld: 'later', expiresAt: { date: '1999-01-01' }, now: start, keyPrefix: prefix(), actor: owner }), (error: unknown) => {
      assert.ok(error instanceof InputErrors, String(error));
      assert.deepEqual(error.errors.map((e) => e.field), ['stopOld', 'expiry']);
      return true;
    });
    assert.equal(await keyCount(), before);
    assert.equal((await ownedKey(ctx.store, alice, old.id)).replacedBy, null);
    const date = new Date(start + 20 * 86_400_000).toISOString().slice(0, 10);
    const { created } = await rollKey(ctx.store, { keyId: old.id, accountId: alice, stopOld: 'now', expiresAt: { date }, now: start, keyPrefix: prefix(), actor: owner });
    assert.equal(created.record.expiresAt, `${date}T23:59:59.999Z`);
    const { events } = await listSecurityEvents(ctx.store, alice, { now: start, pageSize: 1 });
    assert.match(events[0]?.detail ?? '', new RegExp(`which expires ${date} 23:59 UTC; the old key stops now`));
    const { created: forever } = await rollKey(ctx.store, { keyId: created.id, accountId: alice, stopOld: 'now', expiresAt: null, now: start, keyPrefix: prefix(), actor: owner });
    assert.equal(forever.record.expiresAt, null);
    const { created: week } = await rollKey(ctx.store, { keyId: forever.id, accountId: alice, stopOld: 'now', expiresAt: '7d', now: start, keyPrefix: prefix(), actor: owner });
    assert.equal(week.record.expiresAt, new Date(start + 7 * 86_400_000).toISOString());
    const { created: same } = await rollKey(ctx.store, { keyId: week.id, accountId: alice, stopOld: 'now', now: start + 1000, keyPrefix: prefix(), actor: owner });
    assert.equal(same.record.expiresAt, new Date(start + 1000 + 7 * 86_400_000).toISOString(), 'not asked: the old key\'s lifetime');
  });

  it('makes a key with the same name, scopes and expiry span; the old key works until the stop time, shows as retiring, then answers 401', async () => {
    const start = now();
    const old = await createKey(ctx.store, {
      accountId: alice,
      name: 'nightly',
      scopes: ['catalogue:read', 'export'],
      expiresAt: new Date(start + 30 * 86_400_000).toISOString(),
      now: start,
      keyPrefix: prefix(),
      actor: owner,
    });
    ctx.clock.advance(10 * 86_400_000);
    const rolledAt = now();
    const { old: retiring, created } = await rollKey(ctx.store, { keyId: old.id, accountId: alice, stopOld: '1h', now: rolledAt, keyPrefix: prefix(), actor: owner });
    assert.equal(created.record.name, 'nightly');
    assert.deepEqual(created.record.scopes, ['catalogue:read', 'export']);
    assert.equal(created.record.expiresAt, new Date(rolledAt + 30 * 86_400_000).toISOString(), 'the same 30-day lifetime, from the roll');
    assert.notEqual(created.key, old.key);
    assert.deepEqual(keyStatus(retiring, rolledAt), { status: 'retiring', at: new Date(rolledAt + 3_600_000).toISOString() });
    assert.equal(retiring.replacedBy, created.id);

    assert.equal((await call('/catalogue/1', old.key)).statusCode, 200, 'the old key works while retiring');
    assert.equal((await call('/catalogue/1', created.key)).statusCode, 200);
    ctx.clock.advance(3_600_000 - 1);
    assert.equal((await call('/catalogue/1', old.key)).statusCode, 200, 'one millisecond before the stop');
    ctx.clock.advance(1);
    const stopped = await call('/catalogue/1', old.key);
    assert.equal(stopped.statusCode, 401, 'refused at the stop time, with no job having run');
    assert.equal(stopped.json<{ message: string }>().message, 'The API key has been revoked.');
    assert.equal(keyStatus(await ownedKey(ctx.store, alice, old.id), now()).status, 'revoked');
    assert.equal((await call('/catalogue/1', created.key)).statusCode, 200);
  });

  it('stop now: the old key answers 401 on its next request; a key without expiry rolls into one without expiry', async () => {
    const old = await create('rolled now', ['catalogue:read']);
    const { created } = await rollKey(ctx.store, { keyId: old.id, stopOld: 'now', now: now(), keyPrefix: prefix(), actor: OPERATOR });
    assert.equal(created.record.expiresAt, null);
    assert.equal((await call('/catalogue/1', old.key)).statusCode, 401);
    assert.equal((await call('/catalogue/1', created.key)).statusCode, 200);
  });

  it('refuses a bad stop choice, a retiring, revoked or expired key, at their fields', async () => {
    const old = await create('roll twice', ['catalogue:read']);
    await refused(rollKey(ctx.store, { keyId: old.id, stopOld: '2h', now: now(), keyPrefix: prefix(), actor: owner }), 'stopOld', /now, 1h, 24h, 7d/);
    await rollKey(ctx.store, { keyId: old.id, stopOld: '24h', now: now(), keyPrefix: prefix(), actor: owner });
    await refused(rollKey(ctx.store, { keyId: old.id, stopOld: '24h', now: now(), keyPrefix: prefix(), actor: owner }), 'key', /rolled already/);
    const revoked = await keyIdOf(ctx, 'alice-revoked');
    await refused(rollKey(ctx.store, { keyId: revoked, stopOld: 'now', now: now(), keyPrefix: prefix(), actor: owner }), 'key', /revoked/);
    const expired = await keyIdOf(ctx, 'alice-expired');
    await refused(rollKey(ctx.store, { keyId: expired, stopOld: 'now', now: now(), keyPrefix: prefix(), actor: owner }), 'key', /expired/);
  });
});

describe('rename, scopes, revoke', () => {
  it('a scope change takes effect on the next request', async () => {
    const made = await create('scoped', ['catalogue:read', 'collection:read']);
    assert.equal((await call('/collection', made.key)).statusCode, 200);
    const changed = await setKeyScopes(ctx.store, { keyId: made.id, accountId: alice, scopes: ['catalogue:read'], now: now(), keyPrefix: prefix(), actor: owner });
    assert.deepEqual(changed.scopes, ['catalogue:read']);
    const refusedCall = await call('/collection', made.key);
    assert.equal(refusedCall.statusCode, 403);
    assert.equal(refusedCall.json<{ error: string }>().error, 'insufficient_scope');
    await refused(setKeyScopes(ctx.store, { keyId: made.id, scopes: [], now: now(), keyPrefix: prefix(), actor: owner }), 'scopes', /at least one/);
  });

  it('rename: trimmed, unique among live keys, refused on a revoked key; the new name is what the list shows', async () => {
    const made = await create('before rename');
    await refused(renameKey(ctx.store, { keyId: made.id, name: 'second key', now: now(), keyPrefix: prefix(), actor: owner }), 'name', /already named/);
    const renamed = await renameKey(ctx.store, { keyId: made.id, accountId: alice, name: '  after rename ', now: now(), keyPrefix: prefix(), actor: owner });
    assert.equal(renamed.name, 'after rename');
    assert.ok((await accountKeys(ctx.store, ctx.meter, alice, now())).some((k) => k.id === made.id && k.name === 'after rename'));
    const revoked = await keyIdOf(ctx, 'alice-revoked');
    await refused(renameKey(ctx.store, { keyId: revoked, name: 'x', now: now(), keyPrefix: prefix(), actor: owner }), 'key', /revoked/);
  });

  it('revoke: 401 on the next request; revoking again is refused with a message and changes nothing', async () => {
    const made = await create('to revoke');
    assert.equal((await call('/catalogue/1', made.key)).statusCode, 200);
    const revoked = await revokeKey(ctx.store, { keyId: made.id, accountId: alice, now: now(), keyPrefix: prefix(), actor: owner });
    assert.equal(revoked.revokedAt, new Date(now()).toISOString());
    assert.equal((await call('/catalogue/1', made.key)).statusCode, 401);
    ctx.clock.advance(1000);
    await refused(revokeKey(ctx.store, { keyId: made.id, now: now(), keyPrefix: prefix(), actor: owner }), 'key', /already revoked/);
    assert.equal((await ownedKey(ctx.store, alice, made.id)).revokedAt, revoked.revokedAt, 'the first revocation time stays');
  });
});

describe('status and listing', () => {
  it('keyStatus: active, expires soon within 7 days, retiring, expired, revoked, with the time that matters', () => {
    const t = Date.parse('2026-11-20T12:00:00.000Z');
    const iso = (ms: number) => new Date(ms).toISOString();
    const day = 86_400_000;
    const base = { expiresAt: null, revokedAt: null, retiresAt: null };
    assert.deepEqual(keyStatus(base, t), { status: 'active', at: null });
    assert.deepEqual(keyStatus({ ...base, expiresAt: iso(t + 8 * day) }, t), { status: 'active', at: iso(t + 8 * day) });
    assert.deepEqual(keyStatus({ ...base, expiresAt: iso(t + 7 * day) }, t), { status: 'expires_soon', at: iso(t + 7 * day) });
    assert.deepEqual(keyStatus({ ...base, retiresAt: iso(t + 3_600_000) }, t), { status: 'retiring', at: iso(t + 3_600_000) });
    assert.deepEqual(keyStatus({ ...base, retiresAt: iso(t) }, t), { status: 'revoked', at: iso(t) });
    assert.deepEqual(keyStatus({ ...base, expiresAt: iso(t) }, t), { status: 'expired', at: iso(t) });
    assert.deepEqual(keyStatus({ ...base, expiresAt: iso(t - day), revokedAt: iso(t - 2 * day) }, t), { status: 'revoked', at: iso(t - 2 * day) });
  });

  it('expired and revoked keys stay listed for 90 days after they stopped, then leave the list', async () => {
    const listed = async (at: number) => (await accountKeys(ctx.store, ctx.meter, alice, at)).map((k) => k.id);
    const expired = await keyIdOf(ctx, 'alice-expired');
    const second = await keyIdOf(ctx, 'alice-second');
    const expiredAt = Date.parse('2026-01-01T00:00:00.000Z');
    assert.ok((await listed(expiredAt + 90 * 86_400_000)).includes(expired));
    assert.ok(!(await listed(expiredAt + 91 * 86_400_000)).includes(expired));
    assert.ok((await listed(expiredAt + 91 * 86_400_000)).includes(second), 'working keys always listed');
  });
});

describe('security log', () => {
  it('records every change with who, when, from where and which key (name and hint), newest first, paged', async () => {
    const logCtx = await createTestContext();
    try {
      const a = logCtx.loaded.accounts.alice!;
      const me: Actor = { kind: 'owner', accountId: a, address: '198.51.100.4' };
      const p = logCtx.config.keyPrefix;
      const t0 = logCtx.clock.now();
      const made = await createKey(logCtx.store, { accountId: a, name: 'logged', scopes: ['export'], expiresAt: null, now: t0, keyPrefix: p, actor: me });
      await renameKey(logCtx.store, { keyId: made.id, accountId: a, name: 'logged 2', now: t0 + 1000, keyPrefix: p, actor: me });
      await setKeyScopes(logCtx.store, { keyId: made.id, scopes: ['export', 'prices:read'], now: t0 + 2000, keyPrefix: p, actor: OPERATOR });
      const { created } = await rollKey(logCtx.store, { keyId: made.id, accountId: a, stopOld: '7d', now: t0 + 3000, keyPrefix: p, actor: me });
      await revokeKey(logCtx.store, { keyId: created.id, now: t0 + 4000, keyPrefix: p, actor: OPERATOR });
      await changePlan(logCtx.store, { accountId: a, plan: 'addon', actor: OPERATOR, now: t0 + 5000 });

      const { events, total } = await listSecurityEvents(logCtx.store, a, { now: t0 + 6000 });
      assert.equal(total, 6);
      assert.deepEqual(
        events.map((e) => [e.kind, e.actor, e.address, e.key?.name ?? null]),
        [
          ['plan_changed', 'operator', null, null],
          ['key_revoked', 'operator', null, 'logged 2'],
          ['key_rolled', 'owner', '198.51.100.4', 'logged 2'],
          ['key_scopes_changed', 'operator', null, 'logged 2'],
          ['key_renamed', 'owner', '198.51.100.4', 'logged 2'],
          ['key_created', 'owner', '198.51.100.4', 'logged'],
        ],
      );
      assert.equal(events[5]!.key?.hint, keyHint(p, made.key.slice(-4)));
      assert.equal(events[5]!.at, new Date(t0).toISOString());
      assert.match(events[4]!.detail ?? '', /from "logged" to "logged 2"/);
      assert.match(events[0]!.detail ?? '', /enthusiast \(active\) to addon \(active\)/);
      assert.match(events[2]!.detail ?? '', new RegExp(`replaced by ${p}_live_…${created.key.slice(-4)}`));
      assert.match(events[2]!.detail ?? '', /the old key stops at \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/, 'a time for people, not raw ISO');

      const page2 = await listSecurityEvents(logCtx.store, a, { now: t0 + 6000, page: 2, pageSize: 4 });
      assert.deepEqual(page2.events.map((e) => e.kind), ['key_renamed', 'key_created']);
      assert.equal(page2.total, 6);
      // Another account's log is its own.
      assert.equal((await listSecurityEvents(logCtx.store, logCtx.loaded.accounts.bob!, { now: t0 })).total, 0);
      // 90 days on, the first events have left the log.
      const later = await listSecurityEvents(logCtx.store, a, { now: t0 + 90 * 86_400_000 + 2500 });
      assert.deepEqual(later.events.map((e) => e.kind), ['plan_changed', 'key_revoked', 'key_rolled']);
    } finally {
      await logCtx.close();
    }
  });

  it('a refused change writes no log line', async () => {
    const before = (await listSecurityEvents(ctx.store, alice, { now: now() })).total;
    await refused(create('second key'), 'name', /already named/);
    await refused(revokeKey(ctx.store, { keyId: await keyIdOf(ctx, 'alice-revoked'), now: now(), keyPrefix: prefix(), actor: owner }), 'key', /already revoked/);
    assert.equal((await listSecurityEvents(ctx.store, alice, { now: now() })).total, before);
  });

  it('every scope name is accepted', async () => {
    const made = await create('all six', [...SCOPES]);
    assert.deepEqual(made.record.scopes, [...SCOPES]);
  });
});
