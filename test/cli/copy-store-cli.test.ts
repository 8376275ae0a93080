// shelfapi copy-store on the command line: copies into a target migrated beforehand but empty, or into a
// database it creates when the role may; and every bad input is refused with one line naming the problem,
// leaving the target (and the Redis prefix) empty and the source unchanged. Needs the machine's PostgreSQL
// and Redis (always present), whatever TEST_STORE says. What a copy holds: copy-store-traffic.test.ts.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import SqliteDatabase from 'better-sqlite3';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { copyStore, type CopyReport } from '../../src/copy-store/copy-store.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { periodOf } from '../../src/metering/periods.js';
import { migrateTo, migrateToLatest, openStore } from '../../src/store/database.js';
import { assertRefused, parseJsonOutput, runCli, runClis } from '../helpers/cli-helpers.js';
import { fixture } from '../helpers/fixture.js';
import pg from 'pg';
import { TEST_POSTGRES_URL, TEST_REDIS_URL } from '../helpers/test-app.js';
import { freshTarget, KEY_PREFIX, redisKeys, redisPrefix, sha256, targetTableCount, tmp, useCopyStoreWorkspace } from './copy-store-fixtures.js';

useCopyStoreWorkspace();

/** Nothing listens here (this suite's own range of ports): an unreachable PostgreSQL. */
const DEAD_POSTGRES = 'postgres://postgres:s3cret-word@127.0.0.1:9399/test';

describe('shelfapi copy-store on the command line', () => {
  let store: string;
  before(async () => {
    store = tmp.db('cli-source');
    const s = openStore({ dialect: 'sqlite', path: store });
    await migrateToLatest(s);
    await loadDataset(s, fixture(), { keyPrefix: KEY_PREFIX, now: Date.now() });
    await s.close();
  });

  it('copies into a store migrated beforehand but empty, the counts into Redis with REDIS_URL, and reports rows per table', async () => {
    const url = await freshTarget();
    const migrated = openStore({ dialect: 'postgres', url });
    await migrateToLatest(migrated);
    await migrated.close();
    const prefix = redisPrefix();
    const out = parseJsonOutput(await runCli(['copy-store', '--from', store, '--to', url, '--json'], { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix })) as CopyReport;
    assert.equal(out.tables.accounts, 4);
    assert.equal(out.tables.api_keys, fixture().keys!.length);
    assert.equal(out.tables.catalogue_items, fixture().catalogue!.length);
    assert.equal(out.redis?.prefix, prefix);

    const again = await runCli(['copy-store', '--from', store, '--to', url], {});
    assertRefused(again, /target .* is not empty \(rows in accounts, .*nothing was changed/);
    const target = openStore({ dialect: 'postgres', url });
    const accounts = await target.db.selectFrom('accounts').select('id').execute();
    await target.close();
    assert.equal(accounts.length, 4, 'the refused second copy added nothing');
  });

  it('refuses bad input with one line naming the problem, and leaves the target empty and the source as it was', async () => {
    const targets = await Promise.all(Array.from({ length: 9 }, () => freshTarget()));
    const random = `${tmp.dir}/random.bin`;
    writeFileSync(random, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)));
    const foreign = tmp.db('foreign');
    const f = new SqliteDatabase(foreign);
    f.exec('create table notes (id integer primary key, body text)');
    f.close();
    const older = tmp.db('older');
    const o = openStore({ dialect: 'sqlite', path: older });
    await migrateTo(o, '0005-key-management');
    await o.close();
    const extra = tmp.db('extra-table');
    copyFileSync(store, extra);
    const e = new SqliteDatabase(extra);
    e.exec('create table operator_notes (id integer primary key, body text)');
    e.close();
    const badValue = tmp.db('bad-value');
    copyFileSync(store, badValue);
    const b = new SqliteDatabase(badValue);
    b.exec("update catalogue_items set release_year = 'soon' where master_item_id = 3");
    b.close();
    const sources = [store, random, foreign, older, extra, badValue];
    const hashes = sources.map(sha256);
    // A target with a table of someone else's.
    const other = openStore({ dialect: 'postgres', url: targets[8]! });
    await sql`create table invoices (id int)`.execute(other.db);
    await other.close();
    const busyPrefix = redisPrefix();
    const redis = new Redis(TEST_REDIS_URL);
    await redis.set(`${busyPrefix}something`, '1');
    redis.disconnect();

    const cases: Array<{ args: string[]; env?: Record<string, string>; refused: RegExp; target?: string; tables?: number }> = [
      { args: ['--from', store, '--to', `${tmp.dir}/other.sqlite`], refused: /--to must be a postgres:\/\/\.\.\. URL/ },
      { args: ['--from', store, '--to', 'mysql://root@127.0.0.1/shop'], refused: /--to must be a postgres:\/\/\.\.\. URL/ },
      { args: ['--from', `${tmp.dir}/missing.sqlite`, '--to', targets[0]!], refused: /--from .*missing\.sqlite: no such file/, target: targets[0]! },
      { args: ['--from', random, '--to', targets[1]!], refused: /not an SQLite database/, target: targets[1]! },
      { args: ['--from', foreign, '--to', targets[2]!], refused: /an SQLite database, but not a shelfapi store/, target: targets[2]! },
      { args: ['--from', older, '--to', targets[3]!], refused: /older migration \(0005-key-management; .*shelfapi migrate/, target: targets[3]! },
      { args: ['--from', extra, '--to', targets[4]!], refused: /table operator_notes is not one copy-store knows/, target: targets[4]! },
      { args: ['--from', store, '--to', DEAD_POSTGRES], refused: /cannot use the target postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:9399\/test: .*ECONNREFUSED/ },
      { args: ['--from', badValue, '--to', targets[5]!], refused: /copy failed and was rolled back.*integer/, target: targets[5]! },
      { args: ['--from', store, '--to', targets[6]!], env: { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: busyPrefix }, refused: /already holds keys under the prefix/, target: targets[6]! },
      { args: ['--from', store, '--to', targets[7]!, '--redis', 'http://127.0.0.1:6379'], refused: /--redis must be a redis:\/\//, target: targets[7]! },
      { args: ['--from', store, '--to', targets[8]!], refused: /holds tables that are not shelfapi's \(invoices\)/, target: targets[8]!, tables: 1 },
    ];
    // --json: no progress lines on stderr, which a copy slower than 2 s shows before its reason.
    const results = await runClis(cases.map((c) => ({ args: ['copy-store', ...c.args, '--json'], env: c.env ?? {} })), 3);
    for (const [i, c] of cases.entries()) {
      const line = assertRefused(results[i]!, c.refused);
      assert.doesNotMatch(line, /s3cret-word/, 'no password in a message');
      if (c.target !== undefined) assert.equal(await targetTableCount(c.target), c.tables ?? 0, `target left as it was: ${c.args.join(' ')}`);
    }
    assert.deepEqual(sources.map(sha256), hashes, 'no source changed');
    assert.deepEqual(await redisKeys(busyPrefix), [`${busyPrefix}something`], 'the busy prefix kept as it was');
  });

  it('a failure after counts went to Redis leaves both the target and the Redis prefix empty', async () => {
    // A day PostgreSQL takes (it is text) but Redis cannot expire: the copy fails after the month counts are written.
    const corrupt = tmp.db('corrupt-day');
    copyFileSync(store, corrupt);
    const c = new SqliteDatabase(corrupt);
    c.exec(`insert into quota_usage (account_id, period, used) values (1, '${periodOf(Date.now())}', 5)`);
    c.exec("insert into key_usage_daily (key_id, day, requests) values (1, '9999-99-99', 5)");
    c.close();
    const url = await freshTarget();
    const prefix = redisPrefix();
    await assert.rejects(
      copyStore({ from: corrupt, to: url, redis: { target: TEST_REDIS_URL, prefix }, now: Date.now() }),
      /the copy failed and was rolled back, the target left as it was: .*not an integer/,
    );
    assert.equal(await targetTableCount(url), 0);
    assert.deepEqual(await redisKeys(prefix), []);
  });

  it('a missing database: created when the role may (and said on stderr), else refused naming createdb; a failed copy drops what it made', async () => {
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    const suffix = randomUUID().replaceAll('-', '').slice(0, 12);
    const names = { made: `shelfapi_copy_${suffix}`, refused: `shelfapi_nocreate_${suffix}`, failed: `shelfapi_failed_${suffix}` };
    const role = `shelfapi_norole_${suffix}`;
    const urlOf = (database: string, user?: string) => {
      const url = new URL(TEST_POSTGRES_URL);
      url.pathname = `/${database}`;
      if (user !== undefined) url.username = user;
      return url.toString();
    };
    const exists = async (database: string) => (await admin.query('select 1 from pg_database where datname = $1', [database])).rowCount === 1;
    try {
      // A role that may log in but not create databases (the machine's PostgreSQL trusts local connections).
      await admin.query(`create role ${role} login nocreatedb`);

      const made = await runCli(['copy-store', '--from', store, '--to', urlOf(names.made)], {});
      assert.equal(made.code, 0, made.stderr);
      assert.match(made.stderr, new RegExp(`created database ${names.made}`));
      assert.match(made.stdout, /Copied into/);
      const target = openStore({ dialect: 'postgres', url: urlOf(names.made) });
      try {
        assert.equal((await target.db.selectFrom('accounts').select('id').execute()).length, 4);
      } finally {
        await target.close();
      }

      const refused = await runCli(['copy-store', '--from', store, '--to', urlOf(names.refused, role), '--json'], {});
      assertRefused(refused, new RegExp(`database "${names.refused}" does not exist.*createdb .*${names.refused}.*nothing was changed`));
      assert.equal(await exists(names.refused), false);

      const badValue = tmp.db('bad-value-missing-db');
      copyFileSync(store, badValue);
      const b = new SqliteDatabase(badValue);
      b.exec("update catalogue_items set release_year = 'soon' where master_item_id = 3");
      b.close();
      const failed = await runCli(['copy-store', '--from', badValue, '--to', urlOf(names.failed), '--json'], {});
      assertRefused(failed, /copy failed and was rolled back.*the database shelfapi_failed_\w+ made for it was dropped/);
      assert.equal(await exists(names.failed), false, 'the database made for a failed copy is dropped');
    } finally {
      for (const name of Object.values(names)) await admin.query(`drop database if exists ${name} with (force)`);
      await admin.query(`drop role if exists ${role}`);
      await admin.end();
    }
  });

  it('--from and --to are required (usage error, exit 2)', async () => {
    const result = await runCli(['copy-store', '--from', store], {});
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--to <url>/);
  });
});
