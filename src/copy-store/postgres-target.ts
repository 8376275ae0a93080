/**
 * The store copy-store writes: a PostgreSQL database (the first schema of its search_path), which must be
 * empty. Everything here runs on the copy's one transaction, so a refusal or a failure leaves the target
 * exactly as it was found: not even migrated.
 */
import { sql, type Kysely } from 'kysely';
import { InputError } from '../errors/input-error.js';
import type { Database } from '../store/schema.js';
import { shownUrl } from './shown-url.js';
import { ruleOf, tablesWithoutRule } from './table-rules.js';


/** `--to` as given: a postgres:// URL, or an InputError naming what it is instead. */
export function checkTargetUrl(raw: string): string {
  if (!/^postgres(ql)?:\/\//i.test(raw)) {
    // A path is shown as given; a URL of another kind without its password.
    const shown = URL.canParse(raw) ? shownUrl(raw) : raw;
    throw new InputError(`--to must be a postgres://... URL (copy-store copies an SQLite store into PostgreSQL), got ${JSON.stringify(shown)}`);
  }
  try {
    const u = new URL(raw);
    if (u.hostname === '' && !u.searchParams.has('host')) throw new Error('no host');
  } catch {
    throw new InputError('--to is not a valid postgres:// URL');
  }
  return raw;
}

/** Why PostgreSQL could not be used, in one line: the driver's reason, or the network's. */
export function unreachable(url: string, error: unknown): InputError {
  const e = error as { code?: string; message?: string };
  const reason = e.message !== undefined && e.message !== '' ? e.message.split('\n')[0] : (e.code ?? String(error));
  return new InputError(`cannot use the target ${shownUrl(url)}: ${reason}; nothing was changed`);
}

type Db = Kysely<Database>;

/** Tables of the target's schema (the first of its search_path). */
export async function targetTables(db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(db);
  return rows.map((r) => r.name);
}

export async function targetColumns(db: Db, table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select column_name as name from information_schema.columns
    where table_schema = current_schema() and table_name = ${table} order by ordinal_position`.execute(db);
  return rows.map((r) => r.name);
}

/**
 * `tables` in an order that puts every table after the tables its foreign keys point to, so each row finds
 * the rows it refers to already there; otherwise in the order given.
 */
export async function inReferenceOrder(db: Db, tables: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{ child: string; parent: string }>`
    select c.relname as child, p.relname as parent
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_class p on p.oid = k.confrelid
    where k.contype = 'f' and c.relnamespace = current_schema()::regnamespace`.execute(db);
  const parents = new Map<string, Set<string>>();
  for (const r of rows) if (r.child !== r.parent) parents.set(r.child, (parents.get(r.child) ?? new Set()).add(r.parent));
  const ordered: string[] = [];
  const placing = new Set<string>();
  const place = (table: string) => {
    if (ordered.includes(table)) return;
    if (placing.has(table)) throw new Error(`copy-store: foreign keys form a cycle through ${table}`);
    placing.add(table);
    for (const parent of parents.get(table) ?? []) if (tables.includes(parent)) place(parent);
    placing.delete(table);
    ordered.push(table);
  };
  for (const table of tables) place(table);
  return ordered;
}

/**
 * Refuses a target that holds anything: a row in any of shelfapi's tables (beyond the one row a migration
 * puts in a single-row table), or a table that is not shelfapi's. Run after migrating, in the same
 * transaction, so a store migrated beforehand (`shelfapi migrate`) but never used counts as empty.
 */
export async function checkTargetEmpty(db: Db, url: string): Promise<string[]> {
  const tables = await targetTables(db);
  const foreign = tablesWithoutRule(tables);
  if (foreign.length > 0) {
    throw new InputError(
      `the target ${shownUrl(url)} holds tables that are not shelfapi's (${foreign.join(', ')}): copy-store only copies into an empty database or schema; nothing was changed`,
    );
  }
  const held: string[] = [];
  for (const table of tables) {
    const rule = ruleOf(table);
    if (rule.kind === 'skipped') continue;
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from (select 1 from ${sql.table(table)} limit 2) t`.execute(db);
    const n = rows[0]?.n ?? 0;
    if (n > (rule.kind === 'single-row' ? 1 : 0)) held.push(table);
  }
  if (held.length > 0) {
    throw new InputError(
      `the target ${shownUrl(url)} is not empty (rows in ${held.join(', ')}): copy-store only copies into an empty store; nothing was changed`,
    );
  }
  return tables;
}

/** Identity columns (ids PostgreSQL generates): their sequences go past the copied ids, so new rows get new ones. */
export async function advanceIdentities(db: Db): Promise<void> {
  const { rows } = await sql<{ table: string; column: string }>`
    select table_name as table, column_name as column from information_schema.columns
    where table_schema = current_schema() and is_identity = 'YES'`.execute(db);
  for (const { table, column } of rows) {
    await sql`select setval(pg_get_serial_sequence(${table}, ${column}), max_id)
      from (select max(${sql.ref(column)}) as max_id from ${sql.table(table)}) m where max_id is not null`.execute(db);
  }
}

/**
 * Triggers are off while rows go in, so every row lands exactly as the source holds it (the insert trigger
 * of accounts would otherwise reset each account's access version); on again before the commit.
 */
export async function setUserTriggers(db: Db, tables: readonly string[], enabled: boolean): Promise<void> {
  for (const table of tables) {
    await sql`alter table ${sql.table(table)} ${sql.raw(enabled ? 'enable' : 'disable')} trigger user`.execute(db);
  }
}
