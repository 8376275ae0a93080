/**
 * The meter's Lua scripts in Redis (redis-meter.ts): the admission (ADMIT, one or more admissions a call),
 * the give-back (REFUND) and the undo of an admission the server does not answer for (UNDO); the keys one
 * admission touches, and how long Redis keeps them.
 */
import type { AdmitRequest } from './meter.js';
import { accountTag } from './redis-keys.js';
import { ACCESS_SCRIPTS, ADMIT_ACCESS_CHECK, accessKeysOf } from './redis-access-versions.js';
import { WINDOW_MS, dayOf, periodOf } from './periods.js';

/** Per-key days are kept for a year and a bit; a month's count 35 days past its end (copy-store writes the same). */
export const DAY_KEPT_S = 400 * 86_400;
export const QUOTA_KEPT_AFTER_RESET_S = 35 * 86_400;
/**
 * How long Redis keeps each admission's record of what it charged, so that one whose reply was lost can be
 * taken back: for this long after Redis answers again (a restart, a failover), no longer. The records of
 * one call share a hash (the first admission's account and minute), which expires as a whole.
 */
export const ADMISSIONS_KEPT_S = 300;
const ADMISSIONS_BUCKET_MS = 60_000;
/** How many keys, arguments and reply values each admission of a call has in the script (ADMIT). */
export const ADMISSION_KEYS = 6;
const ADMISSION_ARGS = 10;
export const ADMISSION_REPLY = 5;

// One or more admissions, one after another, in the order given: the i-th (from 0) has the 6 KEYS after
// k = 1 + 6i and the 10 ARGV after a = 10i, and its 5 values in the reply after 5i. On a Redis Cluster a call
// carries one admission: the keys of one call must share a slot.
// KEYS: 1 the call's records (member -> what was charged; the first admission's `admitted` key), then for
//       each admission (one hash slot): 1 burst zset, 2 quota counter, 3 key day counter, 4 the account's
//       last-used hash, 5 and 6 the account's access version and its changes' marks (redis-access-versions.ts)
// ARGV: 1 now ms, 2 perMinute, 3 monthly, 4 quota (0/1), 5 member, 6 quota expire-at (s), 7 key id,
//       8 deadline (epoch ms by Redis's clock), 9 the access version the server holds ('' for no check),
//       10 a version to raise it to ('' for none)
// The constants (the window, how long days and admissions are kept) are written into the script's text:
// every argument costs the server's client a conversion and Redis a string, on every request.
// Returns, for each admission, {allowed, remaining, oldest ms or -1, used, quotaAllowed}; {-1, 0, 0, 0, 0}
// past its deadline, {-2, 0, 0, 0, 0} when the held access version is not the account's (nothing written), or
// {-3, the error, 0, 0, 0} when one of its commands failed (a key of the wrong type): that admission fails as
// it would have alone (what it wrote before the failure stays, as it did), and the others of the call stand.
// The records of the admitted are written together at the end, one HSET and one EXPIRE a call: two commands
// an admission had been about a tenth of Redis's time for it (docs/performance.md). The script runs whole,
// so no one sees an admission before its record.
// TIME is read once a call: each admission compares its own deadline with it. A call of ADMISSIONS_PER_CALL
// runs well within REPLY_MARGIN_MS of it.
// A month's and a day's count get their expiry when they are created (INCR answers 1): a count that exists
// already has one (the upgrade and copy-store give every count they write one), so setting it again on every
// request would cost two calls for nothing. The month's count is taken first and put back when it went past the
// quota: one call for a counted request, the common case, where reading it first cost two.
// TIME before writes needs effects replication: always on since Redis 7, the default since 5.
const ADMIT = `
local time = redis.call('TIME')
local clock = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local records, recorded = {}, {}
local function admit(k, a)
  if clock > tonumber(ARGV[a + 8]) then
    return -1, 0, 0, 0, 0
  end
${ADMIT_ACCESS_CHECK}
  local burst = KEYS[k + 1]
  local member = ARGV[a + 5]
  local now = tonumber(ARGV[a + 1])
  local perMinute = tonumber(ARGV[a + 2])
  redis.call('ZREMRANGEBYSCORE', burst, '-inf', now - ${WINDOW_MS})
  local n = redis.call('ZCARD', burst)
  local oldest = -1
  if n > 0 then
    local first = redis.call('ZRANGE', burst, 0, 0, 'WITHSCORES')
    oldest = tonumber(first[2])
  end
  if n >= perMinute then
    return 0, 0, oldest, -1, 0
  end
  redis.call('ZADD', burst, now, member)
  redis.call('PEXPIRE', burst, ${WINDOW_MS})
  redis.call('HSET', KEYS[k + 4], ARGV[a + 7], ARGV[a + 1])
  if oldest == -1 then oldest = now end
  local used
  local counted = 0
  local quota = ARGV[a + 4] == '1'
  if quota then
    local month = KEYS[k + 2]
    used = redis.call('INCR', month)
    if used == 1 then redis.call('EXPIREAT', month, ARGV[a + 6]) end
    if used > tonumber(ARGV[a + 3]) then
      used = redis.call('DECR', month)
    else
      if redis.call('INCR', KEYS[k + 3]) == 1 then redis.call('EXPIRE', KEYS[k + 3], ${DAY_KEPT_S}) end
      counted = 1
    end
  else
    used = tonumber(redis.call('GET', KEYS[k + 2]) or '0')
  end
  records[#records + 1] = member
  records[#records + 1] = counted
  if quota and counted == 0 then
    return 1, perMinute - n - 1, oldest, used, 0
  end
  return 1, perMinute - n - 1, oldest, used, 1
end
local replies = {}
for i = 0, #KEYS / ${ADMISSION_KEYS} - 1 do
  local ok, allowed, remaining, oldest, used, quotaAllowed = pcall(admit, 1 + i * ${ADMISSION_KEYS}, i * ${ADMISSION_ARGS})
  if not ok then
    -- A command's error comes as a string (Redis 7.0) or as a table {err = ...}.
    allowed, remaining, oldest, used, quotaAllowed = -3, type(allowed) == 'table' and tostring(allowed.err) or tostring(allowed), 0, 0, 0
  end
  local at = i * ${ADMISSION_REPLY}
  replies[at + 1] = allowed
  replies[at + 2] = remaining
  replies[at + 3] = oldest
  replies[at + 4] = used
  replies[at + 5] = quotaAllowed
  if allowed == 1 then recorded[#recorded + 1] = at end
end
if #records > 0 then
  -- A records' key of the wrong type fails the admissions it would have recorded, as their own HSET did.
  local ok, err = pcall(function()
    redis.call('HSET', KEYS[1], unpack(records))
    redis.call('EXPIRE', KEYS[1], ${ADMISSIONS_KEPT_S})
  end)
  if not ok then
    for _, at in ipairs(recorded) do
      replies[at + 1] = -3
      replies[at + 2] = type(err) == 'table' and tostring(err.err) or tostring(err)
    end
  end
end
return replies
`;

// KEYS: 1 quota counter, 2 key day counter, 3 the give-back's token; ARGV: 1 deadline (epoch ms by Redis's
// clock), as for ADMIT, 2 whether a token is given (0/1), 3 how long it is kept (s). A token already there is
// a give-back done before (its reply lost): done, nothing more is taken.
const REFUND = `
local time = redis.call('TIME')
if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > tonumber(ARGV[1]) then
  return 0
end
if ARGV[2] == '1' and not redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[3]) then return 1 end
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then redis.call('DECR', KEYS[2]) end
return 1
`;

// Takes back one admission the server does not answer for: its reply came after the server gave up, or
// never came. KEYS: as ADMIT's 1, 2, 3 and 5; ARGV: 1 the admission's member. The admission's own record
// says what it charged, if it ran at all; deleting that record makes the undo happen once, however many
// times it is sent. Returns 1 when there was something to undo.
const UNDO = `
local charged = redis.call('HGET', KEYS[4], ARGV[1])
if not charged then return 0 end
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if charged == '1' then
  if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then redis.call('DECR', KEYS[2]) end
  if tonumber(redis.call('GET', KEYS[3]) or '0') > 0 then redis.call('DECR', KEYS[3]) end
end
return 1
`;

/** The scripts, as commands of the client (redis-client.ts). */
export const SCRIPTS = {
  ...ACCESS_SCRIPTS,
  // Its number of keys is given at each call: 7 for each admission it carries.
  meterAdmit: { lua: ADMIT },
  meterRefund: { numberOfKeys: 3, lua: REFUND },
  meterUndo: { numberOfKeys: 4, lua: UNDO },
};

/**
 * Every key one admission touches, in the order of the script's KEYS for it (the burst window, the month's
 * count, the key's day, the account's last uses, its access version and marks), then where its record goes:
 * its account's `admitted` hash of the minute, which its call replaces with the call's (redis-admission-calls.ts)
 * when the call is sent. A refund and an undo touch some of the same.
 */
export function admissionKeys(prefix: string, r: Pick<AdmitRequest, 'accountId' | 'keyId' | 'now'>): string[] {
  const tag = accountTag(prefix, r.accountId);
  const [access, changing] = accessKeysOf(tag);
  return [
    `${tag}burst`,
    `${tag}quota:${periodOf(r.now)}`,
    `${tag}keyday:${r.keyId}:${dayOf(r.now)}`,
    `${tag}lastused`,
    access,
    changing,
    `${tag}admitted:${Math.floor(r.now / ADMISSIONS_BUCKET_MS)}`,
  ];
}
