// A load names the row that was refused (docs/contract.md, "load"): a rule of the services or a constraint of
// the store (another writer took the email meanwhile). A store that fails (gone, closed) is not the row's
// fault: its error goes up as it is, never dressed as a refusal of the row. On both stores, for real.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { InputError } from '../../src/errors/input-error.js';
import { DatasetError, rowRule } from '../../src/load/dataset-error.js';
import { TEST_POSTGRES_URL } from '../helpers/test-app.js';

const WHERE = 'accounts row 2';

describe('rowRule', () => {
  it("names the row for a rule's refusal", async () => {
    await assert.rejects(
      rowRule(WHERE, async () => {
        throw new InputError('--email: "x" must be an email address');
      }),
      (error: unknown) => error instanceof DatasetError && error.message === `${WHERE}: --email: "x" must be an email address` && !error.fatal,
    );
  });

  it('SQLite: names the row for a unique constraint; a closed connection goes up as it is', async () => {
    const db = new SqliteDatabase(':memory:');
    db.exec('create table accounts (id integer primary key, email text not null unique)');
    db.prepare('insert into accounts (email) values (?)').run('a@example.com');
    await assert.rejects(
      rowRule(WHERE, async () => db.prepare('insert into accounts (email) values (?)').run('a@example.com')),
      // Fatal: the load stops there (on PostgreSQL the transaction is over), with the rows refused so far.
      (error: unknown) => error instanceof DatasetError && error.message.startsWith(`${WHERE}: UNIQUE constraint failed`) && error.fatal,
    );
    db.close();
    await assert.rejects(
      rowRule(WHERE, async () => db.prepare('insert into accounts (email) values (?)').run('b@example.com')),
      (error: unknown) => !(error instanceof DatasetError) && error instanceof Error && /not open/.test(error.message),
    );
  });

  it('PostgreSQL: names the row for a unique constraint; a closed connection goes up as it is', async () => {
    const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await client.connect();
    await client.query('create temporary table row_rule_accounts (id serial primary key, email text not null unique)');
    await client.query('insert into row_rule_accounts (email) values ($1)', ['a@example.com']);
    await assert.rejects(
      rowRule(WHERE, () => client.query('insert into row_rule_accounts (email) values ($1)', ['a@example.com'])),
      (error: unknown) => error instanceof DatasetError && error.message.startsWith(`${WHERE}: duplicate key value violates unique constraint`) && error.fatal,
    );
    await client.end();
    await assert.rejects(
      rowRule(WHERE, () => client.query('insert into row_rule_accounts (email) values ($1)', ['b@example.com'])),
      (error: unknown) => !(error instanceof DatasetError) && error instanceof Error,
    );
  });
});
