/**
 * Table types for Kysely. Column names are snake_case in both dialects; repositories map rows to API
 * objects. Timestamps are ISO 8601 UTC text with milliseconds (sortable, identical in both dialects);
 * booleans are 0/1 integers because better-sqlite3 cannot bind JS booleans.
 */
import type { Generated } from 'kysely';

export interface AccountsTable {
  id: Generated<number>;
  email: string;
  plan: string; // 'enthusiast' | 'addon' | 'none'
  plan_status: string | null; // 'active' | 'lapsed', null with plan 'none'
  created_at: string;
  /** Bumped by triggers whenever a key lookup's answer for the account changes (migration 0008). */
  access_version: Generated<number>;
}

export interface ApiKeysTable {
  id: Generated<number>;
  account_id: number;
  name: string;
  key_hash: string; // hex SHA-256 of the whole key
  last_four: string;
  scopes: string; // space-separated
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  /** When a rolled key stops working; null unless rolled with a later stop. */
  retires_at: Generated<string | null>;
  /** The key that replaced this one when it was rolled. */
  replaced_by: Generated<number | null>;
  /** Canonical addresses and CIDR ranges the key may be used from, space-separated; null: any (migration 0011). */
  allowed_addresses: Generated<string | null>;
}

export interface CatalogueItemsTable {
  master_item_id: number;
  name: string;
  slug: string;
  category: string;
  platform: string;
  status: string;
  sub_category: string | null;
  model_number: string | null;
  release_year: number | null;
  region: string | null;
  format: string | null;
  developer: string | null;
  publisher: string | null;
  genre: string | null;
  manufacturer: string | null;
  description: string | null;
  image_url: string | null;
  /** name folded for search: accents stripped, lower case (src/store/search-text.ts) */
  search_name: string;
  /** lower-cased platform and category for case-insensitive equality through an index */
  platform_key: string;
  category_key: string;
}

export interface PriceColumns {
  upc: string;
  loose: number | null;
  cib: number | null;
  new: number | null;
  box_only: number | null;
  manual_only: number | null;
  scrape_date: string;
}

/** Every price record ever received; (master_item_id, scrape_date) is unique. */
export interface PriceRecordsTable extends PriceColumns {
  id: Generated<number>;
  master_item_id: number;
}

/** The latest record per item by scrape_date, kept in step with price_records by every writer. */
export interface CurrentPricesTable extends PriceColumns {
  master_item_id: number;
}

export interface CollectionItemsTable {
  id: number;
  account_id: number;
  master_item_id: number;
  condition: string;
  status: string;
  purchase_price: number;
  acquired_at: string;
  location: string;
  is_favorite: number;
  created_at: string;
  updated_at: string;
}

export interface ListingsTable {
  id: number;
  account_id: number;
  public_token: string;
  master_item_id: number;
  title: string;
  condition: string;
  status: string;
  price: number;
  currency: string;
  accepts_trade: number;
  shipping_cost: number;
  created_at: string;
  updated_at: string;
}

export interface OffersTable {
  id: number;
  account_id: number;
  listing_id: number;
  amount: number;
  trade_item_id: number | null;
  message: string;
  status: string;
  created_at: string;
  updated_at: string;
}

export interface TransactionsTable {
  id: number;
  buyer_account_id: number;
  seller_account_id: number;
  listing_id: number;
  amount: number;
  platform_fee: number;
  status: string;
  tracking_number: string;
  shipping_carrier: string;
  estimated_delivery: string;
  actual_delivery: string | null;
  created_at: string;
  updated_at: string;
}

/** One row per accepted request in the burst window; rows older than 60 s are pruned as they pass. */
export interface BurstEventsTable {
  account_id: number;
  at_ms: number;
}

/** Request ids of counted requests given back (a day), so a retried give-back lands once. */
export interface RefundTokensTable {
  token: string;
  at_ms: number;
}

/**
 * The meter's row per account. `n` is the number of rows of burst_events of the account, kept in step by
 * the meters. The SQLite meter also keeps in it the window's latest admission times, one period's quota
 * count and one day's per-key counts and last use (src/metering/sqlite-meter-rows.ts); the PostgreSQL
 * meter leaves those null and keeps to burst_events, quota_usage, key_usage_daily and api_keys.
 */
export interface BurstWindowsTable {
  account_id: number;
  n: number;
  recent: Buffer | null;
  period: string | null;
  used: number | null;
  day: string | null;
  keys: Buffer | null;
}

export interface QuotaUsageTable {
  account_id: number;
  period: string; // YYYY-MM
  used: number;
}

export interface KeyUsageDailyTable {
  key_id: number;
  day: string; // YYYY-MM-DD
  requests: number;
}

/** One row (id 1): the version of the served data, bumped by every data write. */
export interface DataVersionTable {
  id: number;
  version: number;
}

/** Secrets the servers share, made once (settings screen: handover secret, form token key). */
export interface SettingsSecretsTable {
  name: string;
  value: string;
  created_at: string;
}

/** Handover tokens already exchanged, by jti, kept until they would have expired anyway. */
export interface SettingsHandoverUsesTable {
  jti: string;
  expires_at: string;
}

/** Settings sessions; the cookie's value is never stored, only its SHA-256. */
export interface SettingsSessionsTable {
  id_hash: string;
  account_id: number;
  created_at: string;
  last_seen_at: string;
  address: string | null;
}

/** A new key waiting to be shown once, encrypted with a key derived from the session's cookie value. */
export interface SettingsRevealsTable {
  session_hash: string;
  key_id: number;
  secret: string;
  created_at: string;
}

/** Create forms already submitted, by their one-time nonce. */
export interface SettingsFormUsesTable {
  nonce: string;
  session_hash: string;
  created_at: string;
}

/** The owner's security log: who changed what on the account's keys and plan, and sign-ins. */
export interface SecurityEventsTable {
  id: Generated<number>;
  account_id: number;
  at: string;
  kind: string;
  actor: string; // 'owner' | 'operator' | 'secret_scanning'
  address: string | null;
  key_id: number | null;
  key_name: string | null;
  key_hint: string | null;
  detail: string | null;
}

/** Reminders for the platform to send (migration 0010, src/services/notices.service.ts). */
export interface NoticesTable {
  id: Generated<number>;
  /** What the notice is about, unique: `key_expiring_7d:42:2027-01-31T23:59:59.999Z`, `quota_80:7:2027-01`. */
  subject: string;
  kind: string;
  account_id: number;
  key_id: number | null;
  /** When the thing happens or happened: the expiry, or when the share of the quota was seen. */
  at: string;
  detail: string;
  created_at: string;
  acked_at: string | null;
}

/** The overview's expiry banner hidden for a key until `until` (migration 0013, src/services/expiry-reminders.ts). */
export interface ExpiryReminderDismissalsTable {
  account_id: number;
  key_id: number;
  /** The start of the next UTC day after the owner hid it, ISO 8601. */
  until: string;
}

/** Requests of one key per UTC day and outcome (src/usage-stats/usage-stats.ts). */
export interface KeyOutcomesDailyTable {
  key_id: number;
  day: string;
  outcome: string;
  requests: number;
}

/** The latest rejected requests of each key (at most 20 kept per key). */
export interface KeyRejectionsTable {
  id: Generated<number>;
  key_id: number;
  at: string;
  method: string;
  path: string;
  status: number;
  error: string;
  message: string;
  request_id: string;
}

/** Each key's last 100 requests of every outcome, 7 days, one row per key and write (migration 0017, src/usage-stats/request-log-chunks.ts). */
export interface KeyRequestLogChunksTable {
  id: Generated<number>;
  key_id: number;
  /** Epoch ms of the chunk's oldest and newest line (PostgreSQL bigint: read as text, Number() it). */
  oldest_ms: number | string;
  newest_ms: number | string;
  lines: number;
  /** JSON: the lines, oldest first (src/usage-stats/request-log-chunks.ts). */
  body: string;
}

/** Requests per key, UTC hour or day, and field (src/usage-stats/usage-buckets.ts). */
export interface KeyUsageBucketsTable {
  key_id: number;
  period: string;
  field: string;
  requests: number;
}

/** Migration 0015: per account and UTC day, the sum of its keys' day buckets and (`o:<outcome>`) day outcomes, kept by triggers. */
export interface AccountUsageDaysTable {
  account_id: number;
  day: string;
  field: string;
  requests: number;
}

export interface KeyLastUseTable {
  key_id: number;
  at: string;
  address: string | null;
}

export interface Database {
  data_version: DataVersionTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  catalogue_items: CatalogueItemsTable;
  price_records: PriceRecordsTable;
  current_prices: CurrentPricesTable;
  collection_items: CollectionItemsTable;
  listings: ListingsTable;
  offers: OffersTable;
  transactions: TransactionsTable;
  burst_events: BurstEventsTable;
  burst_windows: BurstWindowsTable;
  refund_tokens: RefundTokensTable;
  quota_usage: QuotaUsageTable;
  key_usage_daily: KeyUsageDailyTable;
  settings_secrets: SettingsSecretsTable;
  settings_handover_uses: SettingsHandoverUsesTable;
  settings_sessions: SettingsSessionsTable;
  settings_reveals: SettingsRevealsTable;
  settings_form_uses: SettingsFormUsesTable;
  security_events: SecurityEventsTable;
  notices: NoticesTable;
  expiry_reminder_dismissals: ExpiryReminderDismissalsTable;
  key_outcomes_daily: KeyOutcomesDailyTable;
  key_rejections: KeyRejectionsTable;
  key_last_use: KeyLastUseTable;
  key_request_log_chunks: KeyRequestLogChunksTable;
  key_usage_buckets: KeyUsageBucketsTable;
  account_usage_days: AccountUsageDaysTable;
}
