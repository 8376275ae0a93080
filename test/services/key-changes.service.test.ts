// What is done to a key once made (docs/contract.md, "Keys"), by the settings screen and the command line
// alike: roll, rename, scope changes and revoke as the API then answers them, another account's key read as
// missing, each key's status and how long it stays listed, and every change in the owner's security log. Runs
// on both stores.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { changePlan } from '../../src/services/accounts.service.js';
import { OPERATOR, type Actor } from '../../src/services/actor.js';
import { InputErrors, NotFoundError } from '../../src/errors/input-error.js';
import { createKey, renameKey, revokeKey, rollKey, setKeyScopes } from '../../src/services/keys.service.js';
import { accountKeys, ownedKey } from '../../src/services/key-lookup.js';
import { listSecurityEvents } from '../../src/services/security-log.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { keyHint } from '../../src/keys/api-key.js';
import { keyStatus } from '../../src/keys/key-status.js';
import { keyIdOf } from '../helpers/pipeline-helpers.js';
import { createTestContext, V1 } from '../helpers/test-app.js';
import { alice, bob, call, create, ctx, keyCount, now, owner, prefix, refused, useKeysContext } from './keys-fixtures.js';

useKeysContext();

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
