// `shelfapi keys revoke-leaked KEY --source TEXT`: a key reported found public by mail or ticket, revoked
// through the same service as GitHub's reports (the key 401 on the next request, one security log line,
// one key_leaked notice in `shelfapi notices --json`); the same report again changes nothing; a key that
// does not work is left alone and the command fails; the key itself is never printed. Runs on both stores
// (on PostgreSQL with the app's Redis, so that the command's revoke is fenced there as the screen's is).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checksum } from '../../src/keys/api-key.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { listSecurityEvents } from '../../src/services/security-log.js';
import { assertError, keyIdOf, keyOf, url } from '../helpers/pipeline-helpers.js';
import { runCli } from '../helpers/server-process.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';

let ctx: TestContext;
let env: Record<string, string>;

before(async () => {
  ctx = await createTestContext();
  env = { DATABASE_URL: ctx.databaseUrl };
  if (ctx.config.redisUrl !== null && ctx.meter instanceof RedisMeter) Object.assign(env, { REDIS_URL: ctx.config.redisUrl, REDIS_KEY_PREFIX: ctx.meter.prefix });
});
after(async () => {
  await ctx.close();
});

interface Notice {
  kind: string;
  key: { id: number } | null;
  detail: string;
}

async function leakLines() {
  const { events } = await listSecurityEvents(ctx.store, ctx.loaded.accounts.alice!, { now: Date.now(), pageSize: 100 });
  return events.filter((e) => e.detail?.startsWith('revoked: found public') === true);
}

describe('shelfapi keys revoke-leaked', () => {
  it('revokes a working key: 401 next, one log line, one notice; the same report again changes nothing', async () => {
    const key = keyOf(ctx, 'alice-second');
    const id = await keyIdOf(ctx, 'alice-second');
    assert.equal((await ctx.get(url('/me'), 'alice-second')).statusCode, 200);
    const args = ['keys', 'revoke-leaked', key, '--source', 'ticket 1234', '--url', 'https://pastebin.example/abc'];
    const first = await runCli(args, env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`^Key ${id} "second key" \\(shelf_live_…${key.slice(-4)}\\) of account ${ctx.loaded.accounts.alice} is revoked as found public`));
    assert.ok(!first.stdout.includes(key) && !first.stderr.includes(key), 'the key is never printed');
    assertError(await ctx.get(url('/me'), 'alice-second'), 401, 'unauthorized');

    const again = await runCli([...args, '--json'], env);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), {
      label: 'true_positive',
      key: { id, accountId: ctx.loaded.accounts.alice, name: 'second key', hint: `shelf_live_…${key.slice(-4)}` },
    });
    const lines = await leakLines();
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.detail, 'revoked: found public at https://pastebin.example/abc; reported by ticket 1234');
    assert.equal(lines[0]!.actor, 'operator');

    for (let run = 0; run < 2; run++) {
      const listed = await runCli(['notices', '--json'], env);
      assert.equal(listed.code, 0, listed.stderr);
      const leaks = (JSON.parse(listed.stdout) as { notices: Notice[] }).notices.filter((n) => n.kind === 'key_leaked');
      assert.equal(leaks.length, 1, listed.stdout);
      assert.equal(leaks[0]!.key?.id, id);
      assert.match(leaks[0]!.detail, /found public at https:\/\/pastebin\.example\/abc/);
    }
  });

  it('leaves a revoked, expired, unknown or mistyped key alone and fails, without printing it', async () => {
    const unknownBody = `${ctx.config.keyPrefix}_live_${'B'.repeat(43)}`;
    const good = keyOf(ctx, 'alice');
    const cases: Array<[string, RegExp]> = [
      [keyOf(ctx, 'alice-revoked'), /is revoked \d{4}-\d{2}-\d{2}: nothing changed/],
      [keyOf(ctx, 'alice-expired'), /is expired \d{4}-\d{2}-\d{2}: nothing changed/],
      [unknownBody + checksum(unknownBody), /No such key: nothing changed/],
      [`${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`, /form or checksum is wrong\): nothing changed/],
    ];
    for (const [token, message] of cases) {
      const result = await runCli(['keys', 'revoke-leaked', token, '--source', 'mail'], env);
      assert.equal(result.code, 1, result.stdout);
      assert.match(result.stderr, message);
      assert.ok(!result.stdout.includes(token) && !result.stderr.includes(token), 'the token is never printed');
    }
    const json = await runCli(['keys', 'revoke-leaked', keyOf(ctx, 'alice-revoked'), '--source', 'mail', '--json'], env);
    assert.equal(json.code, 1);
    assert.equal((JSON.parse(json.stdout) as { label: string }).label, 'false_positive');
    assert.equal((await ctx.get(url('/me'), 'alice')).statusCode, 200);
    assert.equal((await leakLines()).length, 1, 'only the earlier leak');
  });
});
