// docs/contract.md, "Request pipeline": what is metered and what is not, outcome by outcome, and step 4 (access) checked against the
// store on every request, so that a revoke, an expiry or a plan change holds from the very next request.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { changePlan } from '../../src/services/accounts.service.js';
import { OPERATOR } from '../../src/services/actor.js';
import { revokeKey } from '../../src/services/keys.service.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { ctx, useApiTestApp } from '../helpers/api-test-app.js';
import { assertError, burstLeft, keyIdOf, me, quotaUsed, remaining, url } from '../helpers/pipeline-helpers.js';

useApiTestApp();

describe('metering of each outcome', () => {
  test('/me does not count against the quota but counts toward the burst', async () => {
    const usedBefore = await quotaUsed(ctx, 'alice');
    const first = await me(ctx);
    const second = await me(ctx);
    const third = await me(ctx, 'alice-second');
    assert.equal(burstLeft(second.res), burstLeft(first.res) - 1);
    assert.equal(burstLeft(third.res), burstLeft(first.res) - 2, "the account's keys share one window");
    assert.equal(await quotaUsed(ctx, 'alice'), usedBefore);
    assert.equal(second.used, first.used);
    assert.equal(remaining(second.res), remaining(first.res));
  });

  test('a 400 and a 403 insufficient_scope do not consume quota; a 404 for a missing item does', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const bad = await ctx.get(url('/catalogue?limit=0'));
    assertError(bad, 400, 'bad_request');
    assertError(await ctx.get(url('/catalogue/abc')), 400, 'bad_request');
    assertError(await ctx.get(url('/catalogue'), 'alice-noscope'), 403, 'insufficient_scope');
    assertError(await ctx.get(url('/prices/export.csv'), 'alice-noscope'), 403, 'insufficient_scope');
    assert.equal(await quotaUsed(ctx, 'alice'), start, 'no quota used by 400 and 403');

    const missing = await ctx.get(url('/catalogue/999'));
    assertError(missing, 404, 'not_found');
    assert.equal(await quotaUsed(ctx, 'alice'), start + 1, 'the missing item counted');
    assert.equal(remaining(missing), 50_000 - (start + 1), 'and carries the rate-limit headers of a metered response');
    assert.equal(missing.headers['x-ratelimit-limit'], '50000');

    assertError(await ctx.get(url('/collection/6')), 404, 'not_found');
    assertError(await ctx.get(url('/prices/5')), 404, 'not_found');
    assert.equal(await quotaUsed(ctx, 'alice'), start + 3, "another owner's item and an unpublished price count too");
  });

  test('401 and 403 forbidden are not metered for the account', async () => {
    const first = await me(ctx);
    const start = await quotaUsed(ctx, 'alice');
    assertError(await ctx.get(url('/catalogue'), 'alice-revoked'), 401, 'unauthorized');
    assertError(await ctx.get(url('/catalogue'), 'alice-expired'), 401, 'unauthorized');
    assert.equal(await quotaUsed(ctx, 'alice'), start);
    const second = await me(ctx);
    assert.equal(burstLeft(second.res), burstLeft(first.res) - 1, 'refused keys take no burst slot of the account');

    const carolStart = await quotaUsed(ctx, 'carol');
    assertError(await ctx.get(url('/catalogue'), 'carol'), 403, 'forbidden');
    assert.equal(await quotaUsed(ctx, 'carol'), carolStart);
  });

  test('a successful GET counts once and X-RateLimit-Remaining follows', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const res = await ctx.get(url('/listings'));
    assert.equal(res.statusCode, 200);
    assert.equal(await quotaUsed(ctx, 'alice'), start + 1);
    assert.equal(remaining(res), 50_000 - (start + 1));
    const after = await me(ctx);
    assert.equal(after.used, start + 1);
  });
});

describe('step 4 is checked against the store on every request', () => {
  describe('revocation', () => {
    // Its own store: the keys revoked here stay revoked.
    let revokeCtx: TestContext;
    before(async () => {
      revokeCtx = await createTestContext();
    });
    after(async () => {
      await revokeCtx.close();
    });

    test('a revoke takes effect on the very next request', async () => {
      const ok = await revokeCtx.get(url('/catalogue'), 'alice-second');
      assert.equal(ok.statusCode, 200);
      await revokeKey(revokeCtx.store, { keyId: await keyIdOf(revokeCtx, 'alice-second'), now: revokeCtx.clock.now(), keyPrefix: revokeCtx.config.keyPrefix, actor: OPERATOR });
      const body = assertError(await revokeCtx.get(url('/catalogue'), 'alice-second'), 401, 'unauthorized');
      assert.match(body.message, /revoked/i);
      assertError(await revokeCtx.get(url('/me'), 'alice-second'), 401, 'unauthorized');
      assert.equal((await revokeCtx.get(url('/catalogue'), 'alice')).statusCode, 200, "the account's other keys still work");
    });

    test('a revoked key is 401 even on a lapsed account: the key (step 2) is checked before the plan (step 4)', async () => {
      assertError(await revokeCtx.get(url('/catalogue'), 'carol'), 403, 'forbidden');
      await revokeKey(revokeCtx.store, { keyId: await keyIdOf(revokeCtx, 'carol'), now: revokeCtx.clock.now(), keyPrefix: revokeCtx.config.keyPrefix, actor: OPERATOR });
      assertError(await revokeCtx.get(url('/catalogue'), 'carol'), 401, 'unauthorized');
    });
  });

  test('scope (step 7) is checked before parameters (step 8)', async () => {
    assertError(await ctx.get(url('/catalogue?limit=0&bogus=1'), 'alice-noscope'), 403, 'insufficient_scope');
    assertError(await ctx.get(url('/catalogue/abc'), 'alice-noscope'), 403, 'insufficient_scope');
  });

  describe('expiry', () => {
    let expiryCtx: TestContext;
    before(async () => {
      expiryCtx = await createTestContext({ now: '2026-12-31T23:59:59.999Z' });
    });
    after(async () => {
      await expiryCtx.close();
    });

    test('a key expires at the instant of its expiry (alice-expiring, 2027-01-01T00:00:00.000Z)', async () => {
      assert.equal((await expiryCtx.get(url('/me'), 'alice-expiring')).statusCode, 200);
      expiryCtx.clock.set('2027-01-01T00:00:00.000Z');
      const body = assertError(await expiryCtx.get(url('/me'), 'alice-expiring'), 401, 'unauthorized');
      assert.match(body.message, /expired/i);
      assert.equal((await expiryCtx.get(url('/me'), 'alice')).statusCode, 200, 'keys without an expiry still work');
    });
  });

  describe('plan changes', () => {
    let planCtx: TestContext;
    before(async () => {
      planCtx = await createTestContext();
    });
    after(async () => {
      await planCtx.close();
    });

    test('a lapse takes effect on the next request; a plan change keeps the month usage', async () => {
      const alice = planCtx.loaded.accounts.alice!;
      for (let i = 0; i < 3; i++) assert.equal((await planCtx.get(url('/catalogue'))).statusCode, 200);
      const before = await planCtx.get(url('/catalogue/1'));
      assert.equal(before.headers['x-ratelimit-limit'], '50000');
      assert.equal(remaining(before), 50_000 - 4);

      // enthusiast -> addon: the addon quota, the same month's count.
      await changePlan(planCtx.store, { accountId: alice, plan: 'addon' });
      const addon = await planCtx.get(url('/catalogue/1'));
      assert.equal(addon.statusCode, 200);
      assert.equal(addon.headers['x-ratelimit-limit'], '10000');
      assert.equal(remaining(addon), 10_000 - 5, 'the used count is kept');
      const meAddon = JSON.parse((await planCtx.get(url('/me'))).body) as {
        plan: string;
        limits: { monthly: number; perMinute: number };
        usage: { used: number; remaining: number };
      };
      assert.equal(meAddon.plan, 'addon');
      assert.deepEqual(meAddon.limits, { monthly: 10_000, perMinute: 60 });
      assert.equal(meAddon.usage.used, 5);
      assert.equal(meAddon.usage.remaining, 10_000 - 5);

      // A lapse: refused on the next request, for every key of the account, /me included.
      await changePlan(planCtx.store, { accountId: alice, plan: 'addon', planStatus: 'lapsed' });
      assertError(await planCtx.get(url('/catalogue/1')), 403, 'forbidden');
      assertError(await planCtx.get(url('/catalogue/1'), 'alice-second'), 403, 'forbidden');
      assertError(await planCtx.get(url('/me')), 403, 'forbidden');
      assert.equal(await quotaUsed(planCtx, 'alice'), 5, 'refused requests are not counted');

      // No plan at all: refused the same way.
      await changePlan(planCtx.store, { accountId: alice, plan: 'none' });
      assertError(await planCtx.get(url('/catalogue/1')), 403, 'forbidden');

      // Back to enthusiast: served again, still the same month's count.
      await changePlan(planCtx.store, { accountId: alice, plan: 'enthusiast' });
      const back = await planCtx.get(url('/catalogue/1'));
      assert.equal(back.statusCode, 200);
      assert.equal(back.headers['x-ratelimit-limit'], '50000');
      assert.equal(remaining(back), 50_000 - 6);
    });
  });
});
