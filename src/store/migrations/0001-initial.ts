/**
 * The initial schema, for both dialects. Ids are 64-bit (`bigint` on PostgreSQL; SQLite integers are
 * 64-bit already); the search index is FTS5 trigram on SQLite and pg_trgm GIN on PostgreSQL, both over
 * the folded name, so the two answer the same questions.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';
import { SQLITE_FTS_INSERT_TRIGGER } from '../search-triggers.js';

// Migrations must not depend on the current schema type, which moves on with later migrations: Kysely's
// documented pattern is Kysely<any> here, and only here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export function initialMigration(dialect: Dialect) {
  const pg = dialect === 'postgres';
  const id = pg ? 'bigint' : 'integer';
  const money = pg ? 'double precision' : 'real';
  const flag = pg ? 'smallint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('accounts')
        .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('plan', 'text', (c) => c.notNull().check(sql`plan in ('enthusiast', 'addon', 'none')`))
        .addColumn('plan_status', 'text', (c) => c.check(sql`plan_status in ('active', 'lapsed')`))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
        .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('last_four', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('revoked_at', 'text')
        .addColumn('last_used_at', 'text')
        .execute();
      await db.schema.createIndex('api_keys_account').on('api_keys').columns(['account_id', 'id']).execute();

      await db.schema
        .createTable('catalogue_items')
        .addColumn('master_item_id', id, (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('slug', 'text', (c) => c.notNull())
        .addColumn('category', 'text', (c) => c.notNull())
        .addColumn('platform', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('DRAFT', 'PUBLISHED', 'ARCHIVED')`))
        .addColumn('sub_category', 'text')
        .addColumn('model_number', 'text')
        .addColumn('release_year', 'integer')
        .addColumn('region', 'text')
        .addColumn('format', 'text')
        .addColumn('developer', 'text')
        .addColumn('publisher', 'text')
        .addColumn('genre', 'text')
        .addColumn('manufacturer', 'text')
        .addColumn('description', 'text')
        .addColumn('image_url', 'text')
        .addColumn('search_name', 'text', (c) => c.notNull())
        .addColumn('platform_key', 'text', (c) => c.notNull())
        .addColumn('category_key', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('catalogue_platform').on('catalogue_items').columns(['platform_key', 'master_item_id']).execute();
      await db.schema.createIndex('catalogue_category').on('catalogue_items').columns(['category_key', 'master_item_id']).execute();

      const priceColumns = (t: ReturnType<AnyDb['schema']['createTable']>) =>
        t
          .addColumn('upc', 'text', (c) => c.notNull())
          .addColumn('loose', money)
          .addColumn('cib', money)
          .addColumn('new', money)
          .addColumn('box_only', money)
          .addColumn('manual_only', money)
          .addColumn('scrape_date', 'text', (c) => c.notNull());

      await priceColumns(
        db.schema
          .createTable('price_records')
          .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
          .addColumn('master_item_id', id, (c) => c.notNull().references('catalogue_items.master_item_id')),
      ).execute();
      await db.schema
        .createIndex('price_records_item_date')
        .unique()
        .on('price_records')
        .columns(['master_item_id', 'scrape_date'])
        .execute();

      await priceColumns(
        db.schema
          .createTable('current_prices')
          .addColumn('master_item_id', id, (c) => c.primaryKey().references('catalogue_items.master_item_id')),
      ).execute();
      await db.schema.createIndex('current_prices_upc').on('current_prices').columns(['upc', 'master_item_id']).execute();

      await db.schema
        .createTable('collection_items')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
        .addColumn('master_item_id', id, (c) => c.notNull().references('catalogue_items.master_item_id'))
        .addColumn('condition', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('purchase_price', money, (c) => c.notNull())
        .addColumn('acquired_at', 'text', (c) => c.notNull())
        .addColumn('location', 'text', (c) => c.notNull())
        .addColumn('is_favorite', flag, (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('collection_account').on('collection_items').columns(['account_id', 'id']).execute();
      await db.schema
        .createIndex('collection_account_status')
        .on('collection_items')
        .columns(['account_id', 'status', 'master_item_id', 'condition'])
        .execute();

      await db.schema
        .createTable('listings')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
        .addColumn('public_token', 'text', (c) => c.notNull().unique())
        .addColumn('master_item_id', id, (c) => c.notNull().references('catalogue_items.master_item_id'))
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('condition', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('price', money, (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('accepts_trade', flag, (c) => c.notNull())
        .addColumn('shipping_cost', money, (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('listings_account').on('listings').columns(['account_id', 'id']).execute();

      await db.schema
        .createTable('offers')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('account_id', id, (c) => c.notNull().references('accounts.id'))
        .addColumn('listing_id', id, (c) => c.notNull().references('listings.id'))
        .addColumn('amount', money, (c) => c.notNull())
        .addColumn('trade_item_id', id, (c) => c.references('collection_items.id'))
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('offers_account').on('offers').columns(['account_id', 'id']).execute();

      await db.schema
        .createTable('transactions')
        .addColumn('id', id, (c) => c.primaryKey())
        .addColumn('buyer_account_id', id, (c) => c.notNull().references('accounts.id'))
        .addColumn('seller_account_id', id, (c) => c.notNull().references('accounts.id'))
        .addColumn('listing_id', id, (c) => c.notNull().references('listings.id'))
        .addColumn('amount', money, (c) => c.notNull())
        .addColumn('platform_fee', money, (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('tracking_number', 'text', (c) => c.notNull())
        .addColumn('shipping_carrier', 'text', (c) => c.notNull())
        .addColumn('estimated_delivery', 'text', (c) => c.notNull())
        .addColumn('actual_delivery', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('transactions_buyer').on('transactions').columns(['buyer_account_id', 'id']).execute();
      await db.schema.createIndex('transactions_seller').on('transactions').columns(['seller_account_id', 'id']).execute();

      await db.schema
        .createTable('burst_events')
        .addColumn('account_id', id, (c) => c.notNull())
        .addColumn('at_ms', id, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('burst_events_account').on('burst_events').columns(['account_id', 'at_ms']).execute();

      await db.schema
        .createTable('quota_usage')
        .addColumn('account_id', id, (c) => c.notNull())
        .addColumn('period', 'text', (c) => c.notNull())
        .addColumn('used', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('quota_usage_pk', ['account_id', 'period'])
        .execute();

      await db.schema
        .createTable('key_usage_daily')
        .addColumn('key_id', id, (c) => c.notNull())
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('requests', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('key_usage_daily_pk', ['key_id', 'day'])
        .execute();

      if (pg) {
        await sql`create extension if not exists pg_trgm`.execute(db);
        await sql`create index catalogue_search on catalogue_items using gin (search_name gin_trgm_ops)`.execute(db);
      } else {
        // External-content FTS5 table over the folded name; triggers keep it in step with every writer.
        await sql`create virtual table catalogue_fts using fts5(search_name, content='catalogue_items', content_rowid='master_item_id', tokenize='trigram')`.execute(db);
        await sql.raw(SQLITE_FTS_INSERT_TRIGGER).execute(db);
        await sql`create trigger catalogue_fts_delete after delete on catalogue_items begin
            insert into catalogue_fts(catalogue_fts, rowid, search_name) values ('delete', old.master_item_id, old.search_name); end`.execute(db);
        await sql`create trigger catalogue_fts_update after update of search_name on catalogue_items begin
            insert into catalogue_fts(catalogue_fts, rowid, search_name) values ('delete', old.master_item_id, old.search_name);
            insert into catalogue_fts(rowid, search_name) values (new.master_item_id, new.search_name); end`.execute(db);
      }
    },
  };
}
