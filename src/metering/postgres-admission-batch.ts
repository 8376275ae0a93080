/**
 * The admissions of one account that the PostgreSQL meter sends together (postgres-meter.ts): one
 * transaction takes the account's advisory lock, reads its window and quota counts in one statement,
 * decides every admission in turn here, in the order they were asked for, exactly as one transaction each
 * would have, and writes the outcome in one statement. However many requests the batch holds, that is two
 * round trips (BEGIN, the lock and the read; the write and the COMMIT): an account sending hundreds at once
 * costs the store about what one request does, and holds one pooled connection, not all of them.
 *
 * Few round trips matter most when servers are busy: each reply waits its turn on the event loop, and
 * while it waits the account's lock is held, so every other server's batch of the account waits too. So
 * each round trip is one message in the simple protocol, which takes no parameters: the values are written
 * into the text by the functions below, which accept only integers and the meter's own ISO dates
 * (anything else throws rather than reach PostgreSQL).
 */
import type pg from 'pg';
import type { Admission, AdmitRequest } from './meter.js';
import { WINDOW_MS, dayOf, periodOf } from './periods.js';

/** Advisory locks are one namespace per database: the meter keeps to its own class (two-int form). */
const LOCK_CLASS = 0x5e1f;

/** The statement that serializes the meter's transactions of one account, on every server, until the transaction ends. */
export function lockStatement(accountId: number): string {
  // Ids past 2^31 share a lock with another account: that only serializes the two, never miscounts.
  return `select pg_advisory_xact_lock(${LOCK_CLASS}, ${int(accountId % 2_147_483_647)})`;
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

/** The statement reading what the batch decides on, once the account's lock is held. */
function readStatement(accountId: number, periods: readonly string[]): string {
  const account = int(accountId);
  return `select
      (select array_agg(at_ms::float8 order by at_ms) from burst_events where account_id = ${account}) as times,
      (select json_object_agg(period, used) from quota_usage where account_id = ${account} and period = any(${textArray(periods)})) as used`;
}

function storedAccount(row: { times: number[] | null; used: Record<string, number> | null } | undefined): StoredAccount {
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
 * The batch's transaction on `client`: BEGIN, the lock and the read in one message, then the write sent
 * with `commit` (the statements that end the transaction) in another. Every request is of `accountId`.
 * On an error the caller rolls back.
 */
export async function admitBatch(client: pg.ClientBase, accountId: number, requests: readonly AdmitRequest[], commit: string): Promise<Admission[]> {
  const periods = [...new Set(requests.map((r) => periodOf(r.now)))];
  // Several statements in one message: pg answers with one result each.
  const results = (await client.query(`begin; ${lockStatement(accountId)}; ${readStatement(accountId, periods)}`)) as unknown as pg.QueryResult[];
  const read = results.at(-1) as pg.QueryResult<{ times: number[] | null; used: Record<string, number> | null }> | undefined;
  const { admissions, writes } = decideBatch(storedAccount(read?.rows[0]), requests);
  await client.query(`${writeStatement(accountId, writes)}; ${commit}`);
  return admissions;
}

/** An admission to take back: its time in the window, and its key when it was counted against the quota. */
export interface Undone {
  at: number;
  counted: { keyId: number; period: string; day: string } | null;
}

/**
 * One message that takes back admissions of `accountId` committed after the server answered them 503:
 * BEGIN, the lock, one statement, COMMIT. One of the window's rows at each time goes (as many as there are
 * admissions at that time), and the quota and day counts of the counted ones are given back, never below 0.
 */
export function undoMessage(accountId: number, undone: readonly Undone[]): string {
  const account = int(accountId);
  const times = new Map<number, number>();
  for (const u of undone) times.set(u.at, (times.get(u.at) ?? 0) + 1);
  const periods = new Map<string, number>();
  const days = new Map<string, { keyId: number; day: string; n: number }>();
  for (const { counted } of undone) {
    if (counted === null) continue;
    periods.set(counted.period, (periods.get(counted.period) ?? 0) + 1);
    const keyDay = `${counted.keyId} ${counted.day}`;
    const known = days.get(keyDay);
    if (known === undefined) days.set(keyDay, { keyId: counted.keyId, day: counted.day, n: 1 });
    else known.n++;
  }
  const dayList = [...days.values()];
  return `begin; ${lockStatement(accountId)};
    with late as (
      select * from unnest(${intArray([...times.keys()], 'bigint')}, ${intArray([...times.values()], 'int')}) as v(at_ms, n)
    ), removed as (
      delete from burst_events where ctid in (
        select e.ctid from (
          select ctid, at_ms, row_number() over (partition by at_ms) as k from burst_events
          where account_id = ${account} and at_ms in (select at_ms from late)
        ) e join late on late.at_ms = e.at_ms where e.k <= late.n
      ) returning 1
    ), sized as (
      update burst_windows set n = greatest(0, n - (select count(*) from removed)) where account_id = ${account}
    ), quota as (
      update quota_usage q set used = greatest(0, q.used - v.n)
      from unnest(${textArray([...periods.keys()])}, ${intArray([...periods.values()], 'int')}) as v(period, n)
      where q.account_id = ${account} and q.period = v.period
    )
    update key_usage_daily d set requests = greatest(0, d.requests - v.n)
    from unnest(${intArray(dayList.map((d) => d.keyId), 'bigint')}, ${textArray(dayList.map((d) => d.day))}, ${intArray(dayList.map((d) => d.n), 'int')}) as v(key_id, day, n)
    where d.key_id = v.key_id and d.day = v.day;
    commit`;
}

