/**
 * The owner's security log (docs/contract.md, "Settings screen"): key created, renamed, scopes changed, rolled, revoked; sign-in
 * and sign-out; plan changes. Who (the owner through the screen, or an operator through the command
 * line), when, from which address, which key (name and hint as they were then). Kept 90 days.
 */
import type { Kysely, Selectable } from 'kysely';
import { InputError, NotFoundError } from '../errors/input-error.js';
import type { Store } from '../store/database.js';
import { getKey } from '../store/repositories/api-key.repository.js';
import { countRows, pageRows } from '../store/repositories/page.js';
import type { Database } from '../store/schema.js';
import type { Actor } from './actor.js';

export const SECURITY_EVENT_KINDS = [
  'key_created',
  'key_renamed',
  'key_scopes_changed',
  'key_addresses_changed',
  'key_rolled',
  'key_revoked',
  'signed_in',
  'signed_out',
  'plan_changed',
] as const;
export type SecurityEventKind = (typeof SECURITY_EVENT_KINDS)[number];

export const SECURITY_LOG_KEPT_MS = 90 * 86_400_000;
export const SECURITY_LOG_PAGE_SIZE = 25;

export interface SecurityEventKey {
  id: number;
  name: string;
  hint: string;
}

export interface NewSecurityEvent {
  accountId: number;
  kind: SecurityEventKind;
  actor: Actor;
  /** Epoch ms. */
  at: number;
  key?: SecurityEventKey | null;
  /** What changed, for people: "renamed from 'ci' to 'deploy'", "old key stops 2026-11-25T09:00:00.000Z". */
  detail?: string | null;
}

export interface SecurityEvent {
  id: number;
  at: string;
  kind: SecurityEventKind;
  actor: 'owner' | 'operator' | 'secret_scanning';
  /** The owner's client address; null for the command line. */
  address: string | null;
  key: SecurityEventKey | null;
  detail: string | null;
}

/**
 * Records one event; takes a Kysely handle so that a service records it in the transaction of the change
 * it describes (the change and its log line commit together). Events past 90 days are pruned here.
 */
export async function recordSecurityEvent(db: Kysely<Database>, event: NewSecurityEvent): Promise<void> {
  const at = new Date(event.at).toISOString();
  await db
    .insertInto('security_events')
    .values({
      account_id: event.accountId,
      at,
      kind: event.kind,
      actor: event.actor.kind,
      address: event.actor.kind === 'owner' ? event.actor.address : null,
      key_id: event.key?.id ?? null,
      key_name: event.key?.name ?? null,
      key_hint: event.key?.hint ?? null,
      detail: event.detail ?? null,
    })
    .execute();
  await db
    .deleteFrom('security_events')
    .where('account_id', '=', event.accountId)
    .where('at', '<', new Date(event.at - SECURITY_LOG_KEPT_MS).toISOString())
    .execute();
}

/** What the owner narrows the log to: one kind of event, one key; absent fields match every event. */
export interface SecurityLogFilter {
  kind?: SecurityEventKind;
  keyId?: number;
}

/**
 * The filter an owner (screen) or an operator (`accounts log`) asked for, checked: an unknown kind is
 * refused, and a key must be the account's own (another account's reads as missing, as everywhere).
 */
export async function securityLogFilter(store: Store, accountId: number, input: { kind?: string; keyId?: number }): Promise<SecurityLogFilter> {
  const filter: SecurityLogFilter = {};
  if (input.kind !== undefined) {
    if (!(SECURITY_EVENT_KINDS as readonly string[]).includes(input.kind)) {
      throw new InputError(`unknown kind of event ${JSON.stringify(input.kind)}: one of ${SECURITY_EVENT_KINDS.join(', ')}`);
    }
    filter.kind = input.kind as SecurityEventKind;
  }
  if (input.keyId !== undefined) {
    const key = await getKey(store.db, input.keyId);
    if (key === undefined || key.accountId !== accountId) throw new NotFoundError(`key ${input.keyId} does not exist`);
    filter.keyId = key.id;
  }
  return filter;
}

/** The account's events of the last 90 days that match `filter`: the query both the page and the download read. */
function matchingEvents(store: Store, accountId: number, now: number, filter: SecurityLogFilter) {
  const since = new Date(now - SECURITY_LOG_KEPT_MS).toISOString();
  let query = store.db.selectFrom('security_events').where('account_id', '=', accountId).where('at', '>=', since);
  if (filter.kind !== undefined) query = query.where('kind', '=', filter.kind);
  if (filter.keyId !== undefined) query = query.where('key_id', '=', filter.keyId);
  return query;
}

type SecurityEventRow = Selectable<Database['security_events']>;

function toSecurityEvent(r: SecurityEventRow): SecurityEvent {
  return {
    id: r.id,
    at: r.at,
    kind: r.kind as SecurityEventKind,
    actor: r.actor === 'owner' || r.actor === 'secret_scanning' ? r.actor : 'operator',
    address: r.address,
    key: r.key_id === null ? null : { id: r.key_id, name: r.key_name ?? '', hint: r.key_hint ?? '' },
    detail: r.detail,
  };
}

/** One page (from 1) of the account's events of the last 90 days matching `filter`, newest first, and how many there are. */
export async function listSecurityEvents(
  store: Store,
  accountId: number,
  options: { page?: number; pageSize?: number; now: number; filter?: SecurityLogFilter },
): Promise<{ events: SecurityEvent[]; total: number; page: number; pageSize: number }> {
  const pageSize = options.pageSize ?? SECURITY_LOG_PAGE_SIZE;
  const page = options.page ?? 1;
  const base = matchingEvents(store, accountId, options.now, options.filter ?? {});
  const [rows, total] = await Promise.all([
    pageRows(base.selectAll().orderBy('at', 'desc').orderBy('id', 'desc'), { limit: pageSize, offset: (page - 1) * pageSize }),
    countRows(base),
  ]);
  return { events: rows.map(toSecurityEvent), total, page, pageSize };
}

/** Every event of the last 90 days matching `filter`, newest first: the CSV download. */
export async function allSecurityEvents(store: Store, accountId: number, options: { now: number; filter?: SecurityLogFilter }): Promise<SecurityEvent[]> {
  const rows = await matchingEvents(store, accountId, options.now, options.filter ?? {})
    .selectAll()
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(toSecurityEvent);
}

/**
 * The keys the log names over the last 90 days, newest event first, each with its name and hint as the
 * latest event recorded them: the choices of the page's key filter (a revoked key's events stay findable).
 */
export async function securityLogKeys(store: Store, accountId: number, now: number): Promise<SecurityEventKey[]> {
  const rows = await matchingEvents(store, accountId, now, {})
    .select(['key_id', 'key_name', 'key_hint'])
    .where('key_id', 'is not', null)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const keys = new Map<number, SecurityEventKey>();
  for (const r of rows) {
    if (r.key_id !== null && !keys.has(r.key_id)) keys.set(r.key_id, { id: r.key_id, name: r.key_name ?? '', hint: r.key_hint ?? '' });
  }
  return [...keys.values()];
}
