// The notices service on the suite's store (SQLite, or PostgreSQL with the Redis meter): each thing found
// once, the quota's share read from the meter, acknowledgements all or none.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InputError } from '../../src/errors/input-error.js';
import { ackNotices, pendingNotices, refreshNotices } from '../../src/services/notices.service.js';
import { setAllowedAddresses } from '../../src/services/keys.service.js';
import { OPERATOR } from '../../src/services/actor.js';
import { hashKey } from '../../src/keys/api-key.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

let ctx: TestContext;
const DAY = 86_400_000;

before(async () => {
  // The fixture's "expires later" key of alice expires 2027-01-01T00:00:00.000Z.
  ctx = await createTestContext({ now: '2026-12-29T00:00:00.000Z', env: { PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: 5, perMinute: 100 } }) } });
});
after(async () => ctx.close());

const refresh = () => refreshNotices(ctx.store, ctx.meter, { now: ctx.clock.now(), planLimits: ctx.config.planLimits });
const pending = () => pendingNotices(ctx.store, ctx.config.keyPrefix);

describe('notices', () => {
  it('a key 3 days from its expiry: found once, then the day before, then expired, each once', async () => {
    assert.equal(await refresh(), 1);
    assert.deepEqual((await pending()).map((n) => [n.kind, n.key?.name, n.account.email]), [['key_expiring_7d', 'expires later', 'alice@example.com']]);
    assert.equal(await refresh(), 0, 'nothing new on a second run');
    ctx.clock.advance(2.5 * DAY);
    assert.equal(await refresh(), 1);
    ctx.clock.advance(DAY);
    assert.equal(await refresh(), 1);
    assert.deepEqual((await pending()).map((n) => n.kind), ['key_expiring_7d', 'key_expiring_1d', 'key_expired']);
  });

  it('the quota at 80% and 100%, as the meter counted it', async () => {
    const before = (await pending()).length;
    for (let i = 0; i < 4; i++) assert.equal((await ctx.get(`${V1}/catalogue`, 'alice')).statusCode, 200);
    await refresh();
    const quota = (await pending()).slice(before);
    assert.deepEqual(quota.map((n) => [n.kind, n.account.email, n.key]), [['quota_80', 'alice@example.com', null]]);
    assert.match(quota[0]!.detail, /^4 of 5 requests \(80%\) in 2027-01$/);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice')).statusCode, 200);
    await refresh();
    assert.deepEqual((await pending()).slice(before).map((n) => n.kind), ['quota_80', 'quota_100']);
  });

  it('acknowledging: all or none, and an acknowledged notice is never listed again', async () => {
    const all = await pending();
    await assert.rejects(ackNotices(ctx.store, [all[0]!.id, 987654], ctx.clock.now()), (e: unknown) => e instanceof InputError && /no notice 987654/.test(e.message));
    assert.equal((await pending()).length, all.length, 'nothing acknowledged');
    await assert.rejects(ackNotices(ctx.store, [], ctx.clock.now()), InputError);
    const result = await ackNotices(ctx.store, all.map((n) => n.id), ctx.clock.now());
    assert.deepEqual(result, { acked: all.map((n) => n.id), already: [] });
    await refresh();
    assert.deepEqual(await pending(), []);
  });
});

describe('a key used from a new address (read from its request log)', () => {
  const from = (address: string, keyRef = 'alice-second') =>
    ctx.app.inject({ method: 'GET', url: `${V1}/me`, headers: { 'x-api-key': ctx.loaded.keys[keyRef]! }, remoteAddress: address });
  const refreshWithLog = async () => {
    await ctx.stats.flush();
    return refreshNotices(ctx.store, ctx.meter, { now: ctx.clock.now(), planLimits: ctx.config.planLimits, stats: ctx.stats });
  };

  it("a key's first addresses are not news; a later one is noticed once, naming key and address; a refused attempt is nobody's use", async () => {
    assert.deepEqual(await pending(), []);
    assert.equal((await from('127.0.0.1')).statusCode, 200);
    assert.equal(await refreshWithLog(), 0, "a key's first address is not news");
    assert.deepEqual(await pending(), []);
    ctx.clock.advance(60_000);
    assert.equal((await from('203.0.113.7')).statusCode, 200);
    assert.equal((await from('127.0.0.1')).statusCode, 200);
    assert.equal((await from('198.51.100.9', 'alice-revoked')).statusCode, 401);
    assert.equal(await refreshWithLog(), 1);
    const notices = await pending();
    assert.deepEqual(notices.map((n) => [n.kind, n.key?.name, n.account.email]), [['key_new_address', 'second key', 'alice@example.com']]);
    assert.match(notices[0]!.detail, /^used from 203\.0\.113\.7, first at 20[0-9-]+ [0-9:]+ UTC$/);
    assert.equal(await refreshWithLog(), 0, 'noticed once');
    await ackNotices(ctx.store, notices.map((n) => n.id), ctx.clock.now());
    assert.equal((await from('203.0.113.7')).statusCode, 200);
    assert.equal(await refreshWithLog(), 0, 'acknowledged: not again');
    assert.deepEqual(await pending(), []);
  });

  it('a key with allowed addresses is left out: where it is used from is the owner\'s choice', async () => {
    const keyId = await keyIdOf('alice-second');
    await setAllowedAddresses(ctx.store, { keyId, addresses: '127.0.0.0/8, 192.0.2.0/24', now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR });
    ctx.clock.advance(60_000);
    assert.equal((await from('192.0.2.44')).statusCode, 200, 'an allowed address it was never used from');
    assert.equal(await refreshWithLog(), 0);
    assert.deepEqual(await pending(), []);
  });
});

async function keyIdOf(ref: string): Promise<number> {
  const row = await ctx.store.db.selectFrom('api_keys').select('id').where('key_hash', '=', hashKey(ctx.loaded.keys[ref]!)).executeTakeFirstOrThrow();
  return Number(row.id);
}
