/**
 * The admissions of one account that the PostgreSQL meter sends together (postgres-meter.ts): one
 * transaction takes the account's advisory lock, reads its window and quota counts in one statement,
 * decides every admission in turn here, in the order they were asked for, exactly as one transaction each
 * would have, and writes the outcome in one statement. However many requests the batch holds, that is three
 * round trips (BEGIN with the lock, the read, the write with the COMMIT): an account sending hundreds at once
 * costs the store about what one request does, and holds one pooled connection, not all of them.
 *
 * Few round trips matter most when the server is busy: each reply waits its turn on the event loop. So
 * BEGIN and the lock go in one message, and so do the write and the COMMIT, in the simple protocol, which
 * takes no parameters: their values are written into the text by the functions below, which accept only
 * integers and the meter's own ISO dates (anything else throws rather than reach PostgreSQL).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Admission, AdmitRequest } from './meter.js';
import { WINDOW_MS, dayOf, periodOf } from './periods.js';

/** Advisory locks are one namespace per database: the meter keeps to its own class (two-int form). */
const LOCK_CLASS = 0x5e1f;

/** The statement that serializes the meter's transactions of one account, on every server, until the transaction ends. */
export function lockStatement(accountId: number): string {
  // Ids past 2^31 share a lock with another account: that only serializes the two, never miscounts.
  return `select pg_advisory_xact_lock(${LOCK_CLASS}, ${int(accountId % 2_147_483_647)})`;
}

export async function lockAccount(trx: Kysely<Database>, accountId: number): Promise<void> {
  await sql.raw(lockStatement(accountId)).execute(trx);
}

function int(n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`postgres meter: not an integer: ${n}`);
  return String(n);
}

/** The meter's own strings only: periods, days and ISO instants ("2026-11-20T10:00:00.000Z"). */
function isoText(s: string): string {
  if (!/^[0-9]{4}-[0-9]{2}(-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z)?)?$/.test(s)) throw new Error(`postgres meter: not a date: ${s}`);
  return `'${s}'`;
}

const intArray = (ns: readonly number[], type: 'bigint' | 'int'): string => `array[${ns.map(int).join(',')}]::${type}[]`;
const textArray = (ss: readonly string[]): string => `array[${ss.map(isoText).join(',')}]::text[]`;

/** What the batch reads of the account: its window's admission times (ascending) and its counts per period. */
export interface StoredAccount {
  times: number[];
  used: Map<string, number>;
}

/** What the batch writes back: the outcome of deciding every admission on the stored account. */
export interface BatchWrites {
  /** Stored times at or before this (epoch ms) left the window; -Infinity when none could. */
  prunedThrough: number;
  /** Times admitted by the batch and still in the window at its end. */
  added: number[];
  /** The window's size at the end (burst_windows.n). */
  windowSize: number;
  /** Each admitting key's last use, ISO. */
  lastUsed: Map<number, string>;
  /** Requests counted per period, and per key and day. */
  counted: Map<string, number>;
  countedDays: Map<string, { keyId: number; day: string; n: number }>;
}

interface WindowEntry {
  at: number;
  added: boolean;
}

/** Decides `requests` one after another on `stored`, as separate transactions in that order would. */
export function decideBatch(stored: StoredAccount, requests: readonly AdmitRequest[]): { admissions: Admission[]; writes: BatchWrites } {
  const window: WindowEntry[] = stored.times.map((at) => ({ at, added: false }));
  const used = new Map(stored.used);
  const writes: BatchWrites = { prunedThrough: -Infinity, added: [], windowSize: 0, lastUsed: new Map(), counted: new Map(), countedDays: new Map() };
  const admissions = requests.map((r): Admission => {
    // The window is (now - 60 s, now]: times at or before its start leave it.
    const cutoff = r.now - WINDOW_MS;
    let drop = 0;
    while (drop < window.length && window[drop]!.at <= cutoff) drop++;
    if (drop > 0) window.splice(0, drop);
    writes.prunedThrough = Math.max(writes.prunedThrough, cutoff);
    const n = window.length;
    const oldest = n > 0 ? window[0]!.at : null;
    if (n >= r.limits.perMinute) {
      return { burst: { allowed: false, remaining: 0, resetInMs: oldest === null ? WINDOW_MS : oldest + WINDOW_MS - r.now }, quota: null };
    }
    let at = window.length;
    while (at > 0 && window[at - 1]!.at > r.now) at--;
    window.splice(at, 0, { at: r.now, added: true });
    writes.lastUsed.set(r.keyId, new Date(r.now).toISOString());
    const burst = { allowed: true, remaining: r.limits.perMinute - n - 1, resetInMs: (oldest ?? r.now) + WINDOW_MS - r.now };
    const period = periodOf(r.now);
    const count = used.get(period) ?? 0;
    if (!r.quota) return { burst, quota: { allowed: true, used: count, period } };
    if (count >= r.limits.monthly) return { burst, quota: { allowed: false, used: count, period } };
    used.set(period, count + 1);
    writes.counted.set(period, (writes.counted.get(period) ?? 0) + 1);
    const day = dayOf(r.now);
    const keyDay = `${r.keyId} ${day}`;
    const known = writes.countedDays.get(keyDay);
    if (known === undefined) writes.countedDays.set(keyDay, { keyId: r.keyId, day, n: 1 });
    else known.n++;
    return { burst, quota: { allowed: true, used: count + 1, period } };
  });
  // A time the stored rows do not hold yet is written only if it is still in the window at the end.
  writes.added = window.filter((e) => e.added).map((e) => e.at);
  writes.windowSize = window.length;
  return { admissions, writes };
}

/** Reads what the batch decides on; the account's lock is held (taken with BEGIN). */
async function readAccount(trx: Kysely<Database>, accountId: number, periods: string[]): Promise<StoredAccount> {
  const { rows } = await sql<{ times: number[] | null; used: Record<string, number> | null }>`
    select
      (select array_agg(at_ms::float8 order by at_ms) from burst_events where account_id = ${accountId}) as times,
      (select json_object_agg(period, used) from quota_usage where account_id = ${accountId} and period = any(${periods}::text[])) as used`.execute(trx);
  const row = rows[0];
  return { times: row?.times ?? [], used: new Map(Object.entries(row?.used ?? {})) };
}

/**
 * The statement writing the batch's outcome. Its parts run on one snapshot: the delete never sees the rows
 * the insert adds, and a give-back's decrement committed meanwhile is kept (counts are added as deltas,
 * never overwritten).
 */
function writeStatement(accountId: number, writes: BatchWrites): string {
  const account = int(accountId);
  const prunedThrough = Number.isFinite(writes.prunedThrough) ? int(writes.prunedThrough) : '-1';
  const keyIds = [...writes.lastUsed.keys()];
  const days = [...writes.countedDays.values()];
  return `
    with pruned as (
      delete from burst_events where account_id = ${account} and at_ms <= ${prunedThrough}
    ), added as (
      insert into burst_events (account_id, at_ms) select ${account}, unnest(${intArray(writes.added, 'bigint')})
    ), sized as (
      insert into burst_windows (account_id, n) values (${account}, ${int(writes.windowSize)})
      on conflict (account_id) do update set n = excluded.n
    ), used as (
      update api_keys set last_used_at = v.at
      from unnest(${intArray(keyIds, 'bigint')}, ${textArray(keyIds.map((id) => writes.lastUsed.get(id)!))}) as v(id, at)
      where api_keys.id = v.id
    ), counted as (
      insert into quota_usage (account_id, period, used)
      select ${account}, v.period, v.n from unnest(${textArray([...writes.counted.keys()])}, ${intArray([...writes.counted.values()], 'int')}) as v(period, n)
      on conflict (account_id, period) do update set used = quota_usage.used + excluded.used
    )
    insert into key_usage_daily (key_id, day, requests)
    select v.key_id, v.day, v.n
    from unnest(${intArray(days.map((d) => d.keyId), 'bigint')}, ${textArray(days.map((d) => d.day))}, ${intArray(days.map((d) => d.n), 'int')}) as v(key_id, day, n)
    on conflict (key_id, day) do update set requests = key_usage_daily.requests + excluded.requests`;
}

/**
 * The batch's transaction on `conn`: BEGIN with the lock, the read, then the write sent with `commit` (the
 * statements that end the transaction) in one message. Every request is of `accountId`.
 */
export async function admitBatch(conn: Kysely<Database>, accountId: number, requests: readonly AdmitRequest[], commit: string): Promise<Admission[]> {
  await sql.raw(`begin; ${lockStatement(accountId)}`).execute(conn);
  const periods = [...new Set(requests.map((r) => periodOf(r.now)))];
  const stored = await readAccount(conn, accountId, periods);
  const { admissions, writes } = decideBatch(stored, requests);
  await sql.raw(`${writeStatement(accountId, writes)}; ${commit}`).execute(conn);
  return admissions;
}
