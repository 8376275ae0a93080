/**
 * Migration 0015's triggers again, the same totals kept for less (docs/performance.md, 2026-11-26 17:45):
 * - they run only for rows that count in a day: an hour row of key_usage_buckets (`2026-11-24T08`) no longer
 *   starts the trigger's program to find nothing to add (the trigger's WHEN, on both dialects);
 * - an update that leaves the row's key, day and field as they were (every upsert of the statistics' flush)
 *   adds the difference in one statement, where 0015 took the old requests away and added the new ones in two.
 * A row moved by hand to another key, day or field still moves its requests between totals, as in 0015.
 * The triggers keep 0015's names, so that a later migration or a test drops them the same way.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** What each per-key table adds to the account's day: its key, day and field as SQL over a row `r`, and which rows count. */
const SOURCES = [
  {
    table: 'key_usage_buckets',
    same: 'old.key_id = new.key_id and old.period = new.period and old.field = new.field',
    day: (r: string) => `${r}.period`,
    field: (r: string) => `${r}.field`,
    counts: (r: string) => `length(${r}.period) = 10`,
  },
  {
    table: 'key_outcomes_daily',
    same: 'old.key_id = new.key_id and old.day = new.day and old.outcome = new.outcome',
    day: (r: string) => `${r}.day`,
    field: (r: string) => `'o:' || ${r}.outcome`,
    counts: () => 'true',
  },
] as const;

const UPSERT_END = `on conflict (account_id, day, field) do update set requests = account_usage_days.requests + excluded.requests`;

/** Adds `requests` (SQL) to the day of row r's account; `where` narrows the rows it runs for. */
function addTo(source: (typeof SOURCES)[number], r: 'new' | 'old', requests: string, where: string): string {
  return `insert into account_usage_days (account_id, day, field, requests)
    select k.account_id, ${source.day(r)}, ${source.field(r)}, ${requests} from api_keys k
    where k.id = ${r}.key_id and ${source.counts(r)} and ${where}
    ${UPSERT_END}`;
}

/** 0015's statements per event, or this migration's; each runs for every row its WHEN lets through. */
function steps(s: (typeof SOURCES)[number], lean: boolean): Record<'insert' | 'update' | 'delete', { when: string | null; statements: string[] }> {
  if (!lean) {
    const add = (r: 'new' | 'old', sign: '' | '-') => addTo(s, r, `${sign}${r}.requests`, 'true');
    return {
      insert: { when: null, statements: [add('new', '')] },
      update: { when: null, statements: [add('old', '-'), add('new', '')] },
      delete: { when: null, statements: [add('old', '-')] },
    };
  }
  return {
    insert: { when: s.counts('new'), statements: [addTo(s, 'new', 'new.requests', 'true')] },
    update: {
      when: `${s.counts('old')} or ${s.counts('new')}`,
      statements: [
        addTo(s, 'new', 'new.requests - old.requests', `(${s.same})`),
        addTo(s, 'old', '-old.requests', `not (${s.same})`),
        addTo(s, 'new', 'new.requests', `not (${s.same})`),
      ],
    },
    delete: { when: s.counts('old'), statements: [addTo(s, 'old', '-old.requests', 'true')] },
  };
}

async function replaceTriggers(db: AnyDb, pg: boolean, lean: boolean): Promise<void> {
  for (const s of SOURCES) {
    for (const [event, { when, statements }] of Object.entries(steps(s, lean))) {
      const name = `${s.table}_account_${event}`;
      const whenClause = when === null ? '' : ` when (${when})`;
      if (pg) {
        const returned = event === 'delete' ? 'old' : 'new';
        await sql.raw(`drop trigger if exists ${name} on ${s.table}`).execute(db);
        await sql.raw(`create or replace function ${name}() returns trigger language plpgsql as $$ begin ${statements.join('; ')}; return ${returned}; end $$`).execute(db);
        await sql.raw(`create trigger ${name} after ${event} on ${s.table} for each row${whenClause} execute function ${name}()`).execute(db);
      } else {
        await sql.raw(`drop trigger if exists ${name}`).execute(db);
        await sql.raw(`create trigger ${name} after ${event} on ${s.table} for each row${whenClause} begin ${statements.join('; ')}; end`).execute(db);
      }
    }
  }
}

export function accountDaysTriggerCostMigration(dialect: Dialect) {
  const pg = dialect === 'postgres';
  return {
    up: (db: AnyDb) => replaceTriggers(db, pg, true),
    down: (db: AnyDb) => replaceTriggers(db, pg, false),
  };
}
