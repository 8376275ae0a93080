/**
 * What copy-store does with each table of the store: one rule per table, named here. The copy enumerates
 * the tables of both stores (the migrated PostgreSQL target's and the SQLite source's) and refuses to start
 * when either holds a table without a rule, so that a table a later migration adds is never skipped
 * silently: it gets a rule here first (test/cli/copy-store-traffic.test.ts checks every migrated table has one).
 */

export type TableRule =
  /** Every row and column as the source holds it. */
  | { kind: 'rows' }
  /**
   * Every row and column, into a table whose migration inserted a row already (its single row of
   * settings): the source's row replaces it, and that row alone does not make the target non-empty.
   */
  | { kind: 'single-row' }
  /** Every row, then what the SQLite meter holds in its own rows merged in (meter-state.ts). */
  | { kind: 'rows-and-meter' }
  /** Rebuilt from the SQLite meter's rows: the burst window of the last minute (meter-state.ts). */
  | { kind: 'meter' }
  /** Not copied, for the reason given (shown in the report). */
  | { kind: 'skipped'; reason: string };

export const TABLE_RULES: Readonly<Record<string, TableRule>> = {
  data_version: { kind: 'single-row' },
  access_version_floor: { kind: 'single-row' },
  accounts: { kind: 'rows' },
  // last_used_at: the later of the column and the SQLite meter's row (it writes the column back only daily).
  api_keys: { kind: 'rows-and-meter' },
  catalogue_items: { kind: 'rows' },
  price_records: { kind: 'rows' },
  current_prices: { kind: 'rows' },
  collection_items: { kind: 'rows' },
  listings: { kind: 'rows' },
  offers: { kind: 'rows' },
  transactions: { kind: 'rows' },
  // The current month's count lives in the SQLite meter's row until the month ends.
  quota_usage: { kind: 'rows-and-meter' },
  // Today's counts live in the SQLite meter's row until the day ends.
  key_usage_daily: { kind: 'rows-and-meter' },
  burst_events: { kind: 'meter' },
  burst_windows: { kind: 'meter' },
  refund_tokens: { kind: 'rows' },
  security_events: { kind: 'rows' },
  // Reminders found and whether the platform's mailer acknowledged them: copied, so none is sent twice.
  notices: { kind: 'rows' },
  // Expiry banners an owner hid until the next day: copied, so they stay hidden after the move.
  expiry_reminder_dismissals: { kind: 'rows' },
  key_outcomes_daily: { kind: 'rows' },
  key_rejections: { kind: 'rows' },
  key_last_use: { kind: 'rows' },
  key_request_log_chunks: { kind: 'rows' },
  key_usage_buckets: { kind: 'rows' },
  // Copied as it is: the copy turns the triggers that keep it off while it fills the per-key tables.
  account_usage_days: { kind: 'rows' },
  settings_secrets: { kind: 'rows' },
  settings_handover_uses: { kind: 'rows' },
  settings_sessions: { kind: 'rows' },
  settings_reveals: { kind: 'rows' },
  settings_form_uses: { kind: 'rows' },
  kysely_migration: { kind: 'skipped', reason: 'the target keeps its own migration history (migrated to the latest first)' },
  kysely_migration_lock: { kind: 'skipped', reason: 'the target keeps its own migration history (migrated to the latest first)' },
  catalogue_fts: { kind: 'skipped', reason: "SQLite's search index of the catalogue: PostgreSQL builds its own (trigram index)" },
};

/** SQLite's own tables, and the FTS5 index's shadow tables (catalogue_fts_data, ...), which go with catalogue_fts. */
export function isSqliteInternal(table: string): boolean {
  return table.startsWith('sqlite_') || /^catalogue_fts_(data|idx|content|docsize|config)$/.test(table);
}

/** The tables of `tables` that have no rule. */
export function tablesWithoutRule(tables: readonly string[]): string[] {
  return tables.filter((t) => !Object.hasOwn(TABLE_RULES, t) && !isSqliteInternal(t));
}

export function ruleOf(table: string): TableRule {
  const rule = TABLE_RULES[table];
  if (rule === undefined) throw new Error(`copy-store: no rule for table ${table}`);
  return rule;
}

/** Rules that put rows into the target. */
export function isCopied(rule: TableRule): boolean {
  return rule.kind !== 'skipped';
}
