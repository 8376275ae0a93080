// The rules the operator services keep for every way an account or a key is made (the CLI, `load`, the
// settings screen), on the store TEST_STORE names: emails unique regardless of case (in the service and in
// the database itself, and a migration that refuses a store breaking the rule), key names of 1 to 64
// characters, and a revoke of a revoked key that says so.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createAccount } from '../../src/services/accounts.service.js';
import { InputError, NotFoundError } from '../../src/errors/input-error.js';
import { OPERATOR } from '../../src/services/actor.js';
import { createKey, revokeKey } from '../../src/services/keys.service.js';
import { validateKeyName } from '../../src/services/key-fields.js';
import { migrateToLatest, migrationNames, type Store } from '../../src/store/database.js';
import { insertAccount } from '../../src/store/repositories/account.repository.js';
import { openTestStore } from '../helpers/test-app.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');

let opened: Awaited<ReturnType<typeof openTestStore>>;
let store: Store;
before(async () => {
  opened = await openTestStore();
  store = opened.store;
});
after(async () => {
  await opened.close();
});

const refusedWith = (pattern: RegExp) => (error: unknown) => error instanceof InputError && pattern.test(error.message);

describe('emails are unique regardless of case', () => {
  it('createAccount refuses an email an account has in another case', async () => {
    await createAccount(store, { email: 'alice@example.com', plan: 'addon', now: NOW });
    for (const email of ['ALICE@example.com', 'Alice@Example.COM', 'alice@EXAMPLE.com']) {
      await assert.rejects(createAccount(store, { email, plan: 'addon', now: NOW }), refusedWith(/already exists/), email);
    }
  });

  it('the database refuses it too, whoever writes', async () => {
    await assert.rejects(insertAccount(store.db, { email: 'ALICE@EXAMPLE.COM', plan: 'none', planStatus: null, createdAt: new Date(NOW).toISOString() }));
  });

  it('only ASCII letters are folded, alike on both stores: non-ASCII letters in another case are another address', async () => {
    await createAccount(store, { email: 'émile@example.com', plan: 'addon', now: NOW });
    await createAccount(store, { email: 'Émile@example.com', plan: 'addon', now: NOW });
    await assert.rejects(createAccount(store, { email: 'éMILE@example.com', plan: 'addon', now: NOW }), refusedWith(/already exists/));
  });

  it('the migration refuses a store holding two emails that differ only in case, naming them, and changes nothing', async () => {
    // A store from before the rule: no index yet, two accounts sharing an email but for its case.
    const old = await openTestStore({ upTo: '0003-data-version' });
    try {
      const bob = await insertAccount(old.store.db, { email: 'bob@example.com', plan: 'none', planStatus: null, createdAt: new Date(NOW).toISOString() });
      const bobToo = await insertAccount(old.store.db, { email: 'BOB@example.com', plan: 'none', planStatus: null, createdAt: new Date(NOW).toISOString() });
      await assert.rejects(migrateToLatest(old.store), (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.match(error.message, /unique regardless of case/);
        assert.ok(error.message.includes(`${bob} <bob@example.com>`) && error.message.includes(`${bobToo} <BOB@example.com>`), error.message);
        return true;
      });
      const applied = await sql<{ name: string }>`select name from kysely_migration where name >= '0004'`.execute(old.store.db);
      assert.equal(applied.rows.length, 0, 'neither it nor any later migration is recorded as applied');
      // Once the operator fixes it, the migrations apply and the rule holds again.
      await old.store.db.updateTable('accounts').set({ email: 'bob+old@example.com' }).where('id', '=', bobToo).execute();
      assert.deepEqual(await migrateToLatest(old.store), migrationNames(old.store.dialect).filter((name) => name >= '0004'));
      await assert.rejects(createAccount(old.store, { email: 'Bob@example.com', plan: 'addon', now: NOW }), refusedWith(/already exists/));
    } finally {
      await old.close();
    }
  });
});

describe('key names: 1 to 64 characters once trimmed', () => {
  it('keyName trims, and refuses empty, over-long and control-character names', () => {
    assert.equal(validateKeyName('  ci deploy  '), 'ci deploy');
    assert.equal(validateKeyName('k'.repeat(64)), 'k'.repeat(64));
    assert.equal(validateKeyName('é'.repeat(64)), 'é'.repeat(64), 'characters, not bytes');
    assert.throws(() => validateKeyName(''), refusedWith(/Give the key a name/));
    assert.throws(() => validateKeyName('   '), refusedWith(/Give the key a name/));
    assert.throws(() => validateKeyName('k'.repeat(65)), refusedWith(/at most 64 characters \(got 65\)/));
    assert.throws(() => validateKeyName('k'.repeat(100_000)), refusedWith(/at most 64 characters/));
    assert.throws(() => validateKeyName('ci\u001b[31m'), refusedWith(/control characters/));
  });

  it('createKey stores the trimmed name and refuses a name over 64 characters, writing nothing', async () => {
    const account = await createAccount(store, { email: 'keys@example.com', plan: 'addon', now: NOW });
    const made = await createKey(store, { accountId: account.id, scopes: ['catalogue:read'], name: '  deploy  ', expiresAt: null, now: NOW, keyPrefix: 'shelf', actor: OPERATOR });
    assert.equal(made.record.name, 'deploy');
    const count = async () => (await store.db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n;
    const before = Number(await count());
    await assert.rejects(
      createKey(store, { accountId: account.id, scopes: ['catalogue:read'], name: 'k'.repeat(100_000), expiresAt: null, now: NOW, keyPrefix: 'shelf', actor: OPERATOR }),
      refusedWith(/at most 64 characters/),
    );
    assert.equal(Number(await count()), before);
  });
});

describe('revoking a revoked key', () => {
  it('is refused with the first revocation time, which stays', async () => {
    const account = await createAccount(store, { email: 'revoke@example.com', plan: 'addon', now: NOW });
    const { id } = await createKey(store, { accountId: account.id, scopes: ['catalogue:read'], name: 'old', expiresAt: null, now: NOW, keyPrefix: 'shelf', actor: OPERATOR });
    const first = await revokeKey(store, { keyId: id, now: NOW + 1000, keyPrefix: 'shelf', actor: OPERATOR });
    assert.equal(first.revokedAt, new Date(NOW + 1000).toISOString());
    await assert.rejects(
      revokeKey(store, { keyId: id, now: NOW + 5000, keyPrefix: 'shelf', actor: OPERATOR }),
      refusedWith(new RegExp(`already revoked at ${first.revokedAt}; nothing changed`)),
    );
    const row = await store.db.selectFrom('api_keys').select('revoked_at').where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.revoked_at, first.revokedAt, 'the first revocation time stays');
    await assert.rejects(revokeKey(store, { keyId: 999_999, now: NOW, keyPrefix: 'shelf', actor: OPERATOR }), (e: unknown) => e instanceof NotFoundError);
  });
});
