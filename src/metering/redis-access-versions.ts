/**
 * The accounts' access versions in the meter's Redis (PostgreSQL + Redis), so that a request whose server
 * holds the key's principal makes one round trip, to Redis, instead of two:
 *   `{a:<id>}:access`    the account's access version as PostgreSQL last said (migration 0008's column);
 *   `{a:<id>}:changing`  a set of marks, one per change of the account under way (metering/access-change.ts).
 * Both are under the account's hash tag, beside its burst window, so the admission script reads them on a
 * Redis Cluster too. The admission script (redis-meter-script.ts) refuses to count, writing nothing, when it is given
 * the version a server holds and the account's version differs, is missing, or a mark is present ("stale"):
 * the server then reads PostgreSQL, reloads the principal and admits again without the check.
 *
 * Versions only grow: every write keeps the higher of the two (a version read before a change, written after
 * it, changes nothing), and an account that is gone is written as DELETED_VERSION, above every version.
 * A missing key (expired, or a Redis that restarted empty) is never a match, so nothing is served from a held
 * principal until PostgreSQL has been read again.
 */
import { accountTag } from './redis-keys.js';

/** How long an account's version is kept without a write: past it, one request reads PostgreSQL again. */
export const ACCESS_VERSION_KEPT_S = 86_400;
/**
 * How long a change's mark is kept if its process never removes it (it died, or lost Redis after its commit):
 * the account is served from PostgreSQL until then. Far longer than any change's transaction.
 */
export const ACCESS_MARK_KEPT_S = 3600;
/** The version of an account that is gone: above every version it had, so no held principal matches. */
export const DELETED_VERSION = Number.MAX_SAFE_INTEGER;

/** The two keys of an account's access, in the order the scripts take them. */
export function accessKeys(prefix: string, accountId: number): [string, string] {
  return accessKeysOf(accountTag(prefix, accountId));
}

/** The same, from the account's tag (redis-keys.ts). */
export function accessKeysOf(tag: string): [string, string] {
  return [`${tag}access`, `${tag}changing`];
}

// KEYS: 1 access version, 2 marks; ARGV: 1 token, 2 mark kept (s).
const MARK = `
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
`;

// KEYS: 1 access version, 2 marks; ARGV: 1 version, 2 the mark to remove ('' for none), 3 version kept (s).
// Writes the version unless a higher one is there, then removes the mark.
const RAISE = `
local known = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) > known then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
else
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
if ARGV[2] ~= '' then redis.call('SREM', KEYS[2], ARGV[2]) end
return 1
`;

export const ACCESS_SCRIPTS = {
  accessMark: { numberOfKeys: 2, lua: MARK },
  accessRaise: { numberOfKeys: 2, lua: RAISE },
};

/**
 * The part of the admission script that checks and raises the access version, run before anything is
 * counted. It is pasted into the script's function for one admission (redis-meter-script.ts), whose keys and
 * arguments start after the offsets `k` and `a`: KEYS[k + 5] and KEYS[k + 6] are accessKeys; ARGV[a + 9]
 * the held version ('' for no check), ARGV[a + 10] a version just read from PostgreSQL to raise it to ('' for
 * none). A stale admission returns the admission's five values for "stale", -2 first, having written nothing.
 */
export const ADMIT_ACCESS_CHECK = `
  if ARGV[a + 9] ~= '' then
    if redis.call('EXISTS', KEYS[k + 6]) == 1 or redis.call('GET', KEYS[k + 5]) ~= ARGV[a + 9] then
      return -2, 0, 0, 0, 0
    end
  end
  if ARGV[a + 10] ~= '' then
    local known = tonumber(redis.call('GET', KEYS[k + 5]) or '-1')
    if tonumber(ARGV[a + 10]) > known then redis.call('SET', KEYS[k + 5], ARGV[a + 10], 'EX', ${ACCESS_VERSION_KEPT_S}) end
  end
`;
