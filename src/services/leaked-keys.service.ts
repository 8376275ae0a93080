/**
 * Keys found public (GitHub's secret scanning, or a report by mail or ticket through the command line):
 * each reported token that is a working key of this service is revoked at once, through the same revokeKey
 * as the screen's and the command line's revoke (so every server refuses it from its next request), with
 * "revoked: found public at <url>" in the security log and a `key_leaked` notice for the platform to mail,
 * both in the revoke's own transaction.
 *
 * The answer per token is GitHub's label: `true_positive` for a key that worked when it was reported, or
 * that was revoked for a leak before (so the same report twice gets the same answer and one log line);
 * `false_positive` for anything else: not of this service's form, a bad checksum, an unknown key, or one
 * revoked or expired for another reason. A token is never stored or written anywhere: only its hash is
 * looked up.
 */
import type { Kysely } from 'kysely';
import { InputError, NotFoundError } from '../errors/input-error.js';
import { hashKey, isWellFormedKey, redactSecrets } from '../keys/api-key.js';
import { keyStatus } from '../keys/key-status.js';
import type { Store } from '../store/database.js';
import type { KeyRecord } from '../store/repositories/api-key.repository.js';
import type { Database } from '../store/schema.js';
import type { Actor } from './actor.js';
import { revokeKey } from './keys.service.js';

export type LeakLabel = 'true_positive' | 'false_positive';

export interface LeakReport {
  /** The text found; maybe a key, maybe not. Never logged or stored. */
  token: string;
  /** Where it was found (a public URL), if the reporter said. */
  url: string | null;
  /** Who found it and how: "GitHub secret scanning (commit)", "support ticket 1234". */
  source: string;
}

export interface LeakOptions {
  now: number;
  keyPrefix: string;
  /** Who revokes, for the security log: GitHub's secret scanning (its reports), or an operator (the command line). */
  actor: Actor;
}

export interface LeakAnswer {
  label: LeakLabel;
  /** The key the token is, when it is one of this service's keys (revoked or not); null otherwise. */
  keyId: number | null;
}

/** Hashes asked of the store in one query: well under SQLite's and PostgreSQL's limits on parameters. */
const LOOKUP_BATCH = 500;
/**
 * Revokes run at once on PostgreSQL: each is a short transaction (and a Redis fence), so a few at a time,
 * not 1,000. SQLite's one connection holds one transaction at a time: one after another there.
 */
const REVOKES_AT_ONCE = 4;
/** What the log line and the notice keep of a reporter's text: enough for a URL, never a page of it. */
const MAX_TEXT = 300;

/** The notice's subject: one leak notice per key, ever, which is also how a second report is known. */
export const leakSubject = (keyId: number): string => `key_leaked:${keyId}`;

/** A reporter's text as it may be shown to people: one line, bounded, with any key or token in it cut out. */
function shownText(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  const short = line.length > MAX_TEXT ? `${line.slice(0, MAX_TEXT)}…` : line;
  return redactSecrets(short);
}

/** The security log's and the notice's line: "revoked: found public at <url>; reported by <source>". */
export function leakDetail(report: Pick<LeakReport, 'url' | 'source'>): string {
  const where = report.url === null || report.url.trim() === '' ? 'found public' : `found public at ${shownText(report.url)}`;
  const source = shownText(report.source);
  return `revoked: ${where}${source === '' ? '' : `; reported by ${source}`}`;
}

interface FoundKey {
  id: number;
  accountId: number;
  expiresAt: string | null;
  revokedAt: string | null;
  retiresAt: string | null;
}

async function keysByHash(db: Kysely<Database>, hashes: readonly string[]): Promise<Map<string, FoundKey>> {
  const found = new Map<string, FoundKey>();
  for (let i = 0; i < hashes.length; i += LOOKUP_BATCH) {
    const rows = await db
      .selectFrom('api_keys')
      .select(['id', 'account_id', 'key_hash', 'expires_at', 'revoked_at', 'retires_at'])
      .where('key_hash', 'in', hashes.slice(i, i + LOOKUP_BATCH))
      .execute();
    for (const r of rows) {
      found.set(r.key_hash, { id: Number(r.id), accountId: Number(r.account_id), expiresAt: r.expires_at, revokedAt: r.revoked_at, retiresAt: r.retires_at });
    }
  }
  return found;
}

/** The keys among `keyIds` revoked for a leak already (their notice exists, acknowledged or not). */
async function leakedAlready(db: Kysely<Database>, keyIds: readonly number[]): Promise<Set<number>> {
  const leaked = new Set<number>();
  for (let i = 0; i < keyIds.length; i += LOOKUP_BATCH) {
    const rows = await db
      .selectFrom('notices')
      .select('key_id')
      .where('subject', 'in', keyIds.slice(i, i + LOOKUP_BATCH).map(leakSubject))
      .execute();
    for (const r of rows) if (r.key_id !== null) leaked.add(Number(r.key_id));
  }
  return leaked;
}

/** Whether the key works now (a rolled key still in its grace time does: it is as dangerous public). */
function works(key: FoundKey, now: number): boolean {
  const { status } = keyStatus(key, now);
  return status !== 'revoked' && status !== 'expired';
}

/**
 * Revokes one working key for its leak. True when it is revoked for a leak now (by this call, or by a
 * report of the same key that raced it); false when it turned out revoked for another reason meanwhile.
 */
async function revokeLeaked(store: Store, key: FoundKey, report: LeakReport, options: LeakOptions): Promise<boolean> {
  const { now, keyPrefix, actor } = options;
  const detail = leakDetail(report);
  try {
    await revokeKey(store, {
      keyId: key.id,
      now,
      keyPrefix,
      actor,
      detail,
      also: async (db, _key: KeyRecord, accountId) => {
        await db
          .insertInto('notices')
          .values({
            subject: leakSubject(key.id),
            kind: 'key_leaked',
            account_id: accountId,
            key_id: key.id,
            at: new Date(now).toISOString(),
            detail,
            created_at: new Date(now).toISOString(),
            acked_at: null,
          })
          .onConflict((oc) => oc.column('subject').doNothing())
          .execute();
      },
    });
    return true;
  } catch (error) {
    // Revoked between the lookup and the revoke: by another report of this leak (true), or by its owner.
    if (error instanceof InputError || error instanceof NotFoundError) return (await leakedAlready(store.db, [key.id])).has(key.id);
    throw error;
  }
}

/**
 * Answers every report, in order, revoking each working key reported (once, however often it appears).
 * Lookups are batched: a report of 1,000 tokens is a few queries, plus one revoke per working key.
 */
export async function reportLeakedKeys(
  store: Store,
  reports: readonly LeakReport[],
  options: LeakOptions,
): Promise<LeakAnswer[]> {
  const { now, keyPrefix } = options;
  // Only tokens of this service's form with a good checksum are looked up; the rest cost nothing more.
  const hashes = reports.map((r) => (isWellFormedKey(r.token, keyPrefix) ? hashKey(r.token) : null));
  const found = await keysByHash(store.db, [...new Set(hashes.filter((h): h is string => h !== null))]);
  const keys = [...found.values()];
  const leaked = await leakedAlready(store.db, keys.map((k) => k.id));
  // Each working key once, with the first report that named it (its URL goes in the log).
  const toRevoke = new Map<number, { key: FoundKey; report: LeakReport }>();
  hashes.forEach((hash, i) => {
    const key = hash === null ? undefined : found.get(hash);
    if (key !== undefined && !leaked.has(key.id) && !toRevoke.has(key.id) && works(key, now)) toRevoke.set(key.id, { key, report: reports[i]! });
  });
  const queue = [...toRevoke.values()];
  const workers = Array.from({ length: Math.min(store.dialect === 'sqlite' ? 1 : REVOKES_AT_ONCE, queue.length) }, async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      if (await revokeLeaked(store, next.key, next.report, options)) leaked.add(next.key.id);
    }
  });
  await Promise.all(workers);
  return hashes.map((hash) => {
    const key = hash === null ? undefined : found.get(hash);
    if (key === undefined) return { label: 'false_positive', keyId: null };
    return { label: leaked.has(key.id) ? 'true_positive' : 'false_positive', keyId: key.id };
  });
}

/** One report (the command line's): its answer. */
export async function reportLeakedKey(store: Store, report: LeakReport, options: LeakOptions): Promise<LeakAnswer> {
  const [answer] = await reportLeakedKeys(store, [report], options);
  if (answer === undefined) throw new Error('reportLeakedKey: no answer');
  return answer;
}
