/**
 * Shared by the key service suites (key-rules.service and key-changes.service .test.ts): one test app per
 * file, its accounts with alice acting as owner, and short ways to make a key, call the API with one and expect
 * a refusal at a field. useKeysContext() registers the hooks that set these bindings, so each file that calls
 * it reads an app of its own.
 */
import { after, before, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Actor } from '../../src/services/actor.js';
import { InputError, type InputField } from '../../src/errors/input-error.js';
import { createKey } from '../../src/services/keys.service.js';
import { nextWindow } from '../helpers/pipeline-helpers.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

export let ctx: TestContext;
export let alice: number;
export let bob: number;
export let carol: number;
export let owner: Actor;

/** The file's hooks: its test app for all its tests, and a fresh burst window before each test. */
export function useKeysContext(): void {
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
}

export const prefix = () => ctx.config.keyPrefix;
export const now = () => ctx.clock.now();

/** Asserts the promise fails with an InputError at `field` whose message matches. */
export async function refused(promise: Promise<unknown>, field: InputField, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof InputError, `InputError expected, got ${String(error)}`);
    assert.equal(error.field, field, error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

export async function keyCount(): Promise<number> {
  const row = await ctx.store.db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** GET with a full key (created by a test), through the real pipeline. */
export function call(path: string, key: string) {
  return ctx.get(`${V1}${path}`, null, { headers: { 'x-api-key': key } });
}

export const create = (name: string, scopes: readonly string[] = ['catalogue:read'], extra: { accountId?: number; expiresAt?: string | null; actor?: Actor } = {}) =>
  createKey(ctx.store, {
    accountId: extra.accountId ?? alice,
    name,
    scopes,
    expiresAt: extra.expiresAt ?? null,
    now: now(),
    keyPrefix: prefix(),
    actor: extra.actor ?? owner,
  });
