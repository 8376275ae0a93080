/**
 * Every change of what a key lookup reads (revoke, roll, scopes, plan change or lapse) made through the
 * services reaches the meter's Redis before the service returns, from whatever process makes it (a server's
 * settings screen, the command line). Servers on PostgreSQL + Redis use a held principal only while the
 * account's access version in Redis is the one they hold and no change of the account is under way
 * (redis-access-versions.ts, the admission script), so the next request after the change reads PostgreSQL.
 *
 * The one place of the protocol, for every service that changes access:
 *   1. mark the account "changing" in Redis, before anything is written: a Redis that cannot be reached
 *      refuses the change (AccessChangeUnavailableError), with nothing written;
 *   2. run the change in its transaction (migration 0008's triggers bump accounts.access_version);
 *   3. write the account's version as committed to Redis (never lower) and remove the mark.
 * While the mark is there, no server uses a held principal of the account. A mark that cannot be removed
 * (Redis went away after the commit) stays until it expires (REDIS_ACCESS_MARK_TTL_S): the account is served
 * from PostgreSQL meanwhile, never from an old principal.
 *
 * The fence belongs to the store the services are given: whoever opens a store for a server or a command on
 * PostgreSQL + Redis registers it (buildApp, the command line). A change made without one (a store opened
 * elsewhere, psql) still reaches Redis through migration 0014's NOTIFY, within a second (version-listener.ts).
 */
import type { Store } from '../store/database.js';
import { MeterUnavailableError } from './meter.js';

export interface AccessFence {
  /** Marks the account as changing; rejects (nothing marked) when Redis cannot be reached. Returns the mark's token. */
  markChanging(accountId: number): Promise<string>;
  /** Writes `version` (never lower; 'deleted' for an account that is gone) and removes the mark of `token`. */
  settleChange(accountId: number, token: string, version: number | 'deleted'): Promise<void>;
}

/** A change refused before anything was written: the meter's Redis could not be reached. */
export class AccessChangeUnavailableError extends MeterUnavailableError {
  constructor(cause: unknown) {
    super(cause);
    this.name = 'AccessChangeUnavailableError';
    this.message =
      'Nothing was changed: the meter\'s Redis could not be reached, and every server must learn of this change before it is made. Try again once Redis answers.';
  }
}

const fences = new WeakMap<Store, AccessFence>();

/** Makes every access change made through the services on `store` go through `fence` (see the file comment). */
export function registerAccessFence(store: Store, fence: AccessFence): void {
  fences.set(store, fence);
}

export function accessFenceOf(store: Store): AccessFence | null {
  return fences.get(store) ?? null;
}

/**
 * Runs `change` (a transaction that may bump the account's access version) inside the fence of `store`, if
 * it has one. The version written after it is read after the commit, so it is at least the change's own.
 */
export async function withAccessChange<T>(store: Store, accountId: number, change: () => Promise<T>): Promise<T> {
  const fence = fences.get(store);
  if (fence === undefined) return change();
  let token: string;
  try {
    token = await fence.markChanging(accountId);
  } catch (error) {
    throw new AccessChangeUnavailableError(error);
  }
  let result: T;
  try {
    result = await change();
  } catch (error) {
    // Rolled back, or (a commit whose reply was lost) perhaps not: the version as it now is, if it can be read.
    await settle(store, fence, accountId, token);
    throw error;
  }
  await settle(store, fence, accountId, token);
  return result;
}

/**
 * Writes the account's committed version and removes the mark. When either cannot be done the mark stays
 * and expires by itself; the change is made all the same (servers read PostgreSQL for the account meanwhile).
 */
async function settle(store: Store, fence: AccessFence, accountId: number, token: string): Promise<void> {
  let version: number | 'deleted';
  try {
    const row = await store.db.selectFrom('accounts').select('access_version').where('id', '=', accountId).executeTakeFirst();
    version = row === undefined ? 'deleted' : Number(row.access_version);
  } catch {
    return;
  }
  await fence.settleChange(accountId, token, version).catch(() => undefined);
}
