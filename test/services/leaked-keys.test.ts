// A key found public (src/services/leaked-keys.service.ts): a working key is revoked as the screen's revoke
// does it, with one security log line naming where it was found and one key_leaked notice; the same report
// again answers the same and writes nothing; anything that is not a working key is a false positive and
// changes nothing. Runs on both stores.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checksum } from '../../src/keys/api-key.js';
import { leakDetail, reportLeakedKeys, type LeakReport } from '../../src/services/leaked-keys.service.js';
import { accountLeaks, replaceLeakedKey } from '../../src/services/leaked-key-replacement.js';
import { OPERATOR, SECRET_SCANNING } from '../../src/services/actor.js';
import { InputError } from '../../src/errors/input-error.js';
import { getKey } from '../../src/store/repositories/api-key.repository.js';
import { pendingNotices } from '../../src/services/notices.service.js';
import { listSecurityEvents } from '../../src/services/security-log.js';
import { assertError, keyIdOf, keyOf, url } from '../helpers/pipeline-helpers.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => {
  await ctx.close();
});

const opts = () => ({ now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: SECRET_SCANNING });
const report = (token: string, url: string | null = 'https://github.com/someone/repo/blob/main/app.js'): LeakReport => ({
  token,
  url,
  source: 'GitHub secret scanning (content)',
});

async function leakEvents(accountId: number) {
  const { events } = await listSecurityEvents(ctx.store, accountId, { now: ctx.clock.now(), pageSize: 100 });
  return events.filter((e) => e.detail?.startsWith('revoked: found public') === true);
}

describe('reportLeakedKeys', () => {
  it('revokes a working key once: 401 next, one log line, one notice; the same report again answers the same', async () => {
    const alice = ctx.loaded.accounts.alice!;
    const key = keyOf(ctx, 'alice-second');
    assert.equal((await ctx.get(url('/me'), 'alice-second')).statusCode, 200);
    const first = await reportLeakedKeys(ctx.store, [report(key)], opts());
    assert.deepEqual(first, [{ label: 'true_positive', keyId: await keyIdOf(ctx, 'alice-second') }]);
    assertError(await ctx.get(url('/me'), 'alice-second'), 401, 'unauthorized');
    const again = await reportLeakedKeys(ctx.store, [report(key), report(key, 'https://example.com/other')], opts());
    assert.deepEqual(again.map((a) => a.label), ['true_positive', 'true_positive']);
    const events = await leakEvents(alice);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.kind, 'key_revoked');
    assert.equal(events[0]!.actor, 'secret_scanning');
    assert.equal(events[0]!.detail, 'revoked: found public at https://github.com/someone/repo/blob/main/app.js; reported by GitHub secret scanning (content)');
    const notices = (await pendingNotices(ctx.store, ctx.config.keyPrefix)).filter((n) => n.kind === 'key_leaked');
    assert.equal(notices.length, 1);
    assert.equal(notices[0]!.key?.id, await keyIdOf(ctx, 'alice-second'));
    assert.match(notices[0]!.detail, /found public at https:\/\/github\.com\/someone/);
  });

  it('answers false_positive for a bad checksum, an unknown, a revoked or an expired key, another prefix, and changes nothing', async () => {
    const good = keyOf(ctx, 'bob');
    const body = good.slice(0, -6);
    const badChecksum = body + (checksum(body) === '000000' ? '000001' : '000000');
    const unknownBody = `${ctx.config.keyPrefix}_live_${'A'.repeat(43)}`;
    const tokens = [badChecksum, unknownBody + checksum(unknownBody), keyOf(ctx, 'alice-revoked'), keyOf(ctx, 'alice-expired'), good.replace(/^[a-z0-9]+_/, 'other_'), '', 'x'.repeat(5000)];
    const answers = await reportLeakedKeys(ctx.store, tokens.map((t) => report(t)), opts());
    assert.deepEqual(answers.map((a) => a.label), tokens.map(() => 'false_positive'));
    assert.equal((await ctx.get(url('/me'), 'bob')).statusCode, 200);
    assert.equal((await leakEvents(ctx.loaded.accounts.bob!)).length, 0);
    assert.equal((await leakEvents(ctx.loaded.accounts.alice!)).length, 1, 'only the earlier leak');
  });

  it('replaces a leaked key once, with its name and scopes; a key not leaked is refused', async () => {
    const alice = ctx.loaded.accounts.alice!;
    const leakedId = await keyIdOf(ctx, 'alice-second');
    const input = { accountId: alice, now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR };
    const [leak] = await accountLeaks(ctx.store, alice, [leakedId, await keyIdOf(ctx, 'alice-revoked')], ctx.clock.now(), ctx.config.keyPrefix);
    assert.equal(leak?.keyId, leakedId);
    assert.equal(leak?.replacedBy, null);
    await assert.rejects(replaceLeakedKey(ctx.store, { ...input, keyId: await keyIdOf(ctx, 'alice-revoked') }), (e: unknown) => e instanceof InputError && /not revoked for a leak/.test(e.message));
    await assert.rejects(replaceLeakedKey(ctx.store, { ...input, keyId: await keyIdOf(ctx, 'bob') }), /does not exist/);
    const created = await replaceLeakedKey(ctx.store, { ...input, keyId: leakedId });
    const old = await getKey(ctx.store.db, leakedId);
    assert.equal(old?.replacedBy, created.id);
    assert.deepEqual([created.record.name, created.record.scopes], [old?.name, old?.scopes]);
    assert.equal((await ctx.app.inject({ method: 'GET', url: url('/me'), headers: { 'x-api-key': created.key } })).statusCode, 200);
    await assert.rejects(replaceLeakedKey(ctx.store, { ...input, keyId: leakedId }), /replaced already/);
    assert.deepEqual((await accountLeaks(ctx.store, alice, [leakedId], ctx.clock.now(), ctx.config.keyPrefix))[0]?.replacedBy, { id: created.id, name: old?.name });
  });

  it('keeps a reporter text to one bounded line with keys cut out', () => {
    const key = keyOf(ctx, 'bob');
    const detail = leakDetail({ url: `https://example.com/?k=${key}\nnext`, source: 'x'.repeat(1000) });
    assert.ok(!detail.includes(key));
    assert.ok(!detail.includes('\n'));
    assert.ok(detail.length < 700);
  });
});
