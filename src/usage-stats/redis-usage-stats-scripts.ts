/**
 * The statistics' Lua scripts in Redis (redis-usage-stats.ts): STATS_WRITE writes a flush's counts, last uses
 * and lists; SUM_HASHES sums many days' or keys' hashes in one call; FILL_TOTAL fills an account's day total
 * from its keys' hashes. How long each kind of key is kept is written into their text.
 */
import { HOURS_KEPT_MS } from './usage-buckets.js';
import { REJECTIONS_KEPT, REQUEST_LOG_KEPT, REQUEST_LOG_MS } from './usage-stats.js';

export const DAYS_KEPT_S = 400 * 86_400;
const REJECTIONS_KEPT_S = 90 * 86_400;
const HOURS_KEPT_S = HOURS_KEPT_MS / 1000;
const LOG_KEPT_S = REQUEST_LOG_MS / 1000;

// KEYS: the hashes and lists written (one hash slot on a cluster). ARGV[1]: a JSON array of strings, the
// operations one after another, each naming its key by index into KEYS; ARGV[2] on: the lists' items, each an
// argument of its own (inside ARGV[1] each item, itself JSON, was encoded again, every quote escaped: a
// request log line cost the writer 2.5 µs more, half again what its first encoding cost):
//   h <key> <n> <field> <by> ...   a day's hash: HINCRBY each field; EXPIRE when a field was created (below)
//   H <key> <n> <field> <by> ...   the same for an hour's hash
//   l <key> <n> <from>             a request log: LPUSH the n items from ARGV[from] (oldest first: the newest
//                                  ends at the head), LTRIM when the list grew past what is kept (LPUSH answers
//                                  its length), EXPIRE
//   r <key> <n> <from>             the same for a key's rejections
//   u <key> <key id> <at ms> <address>  the last use "<at ms> <address>", replaced only by one at least as
//                                       recent; EXPIRE at the key's first use of a UTC day (below)
//   s <key> <value>                SET the key to the value unless it is set (an account's totals-since)
// How long each kind is kept, and how many items a list keeps, are written into the script's text, as the
// meter's constants are: an argument costs the writer a string to encode and the script one to decode, and
// these were 7 of the ~45 a request.
// A hash of counts is named by its period (a day or an hour), so it gets its expiry when it is created, as the
// meter's counts do, not at every write: a field whose count after HINCRBY is what was added was just created
// (counts only grow), and a hash is created with its first field. An item GET's statistics made 5.7 EXPIREs a
// request beside 7.5 HINCRBYs (INFO commandstats, 10,000 keys), nearly all of hashes that had their expiry.
// The last uses (a hash per account, a field per key) had their expiry set at every write: 3 of the ~10
// commands an item GET's statistics ran at 10,000 keys (INFO commandstats, 2026-11-28). It is set again when
// a key's last use moves to another UTC day (or is new): every write follows one that set it within the day
// before, so the hash is kept at least its time to live less a day after its latest write.
const STATS_WRITE = `
local OPS = cjson.decode(ARGV[1])
local i = 1
local n = #OPS
while i <= n do
  local op = OPS[i]
  local key = KEYS[tonumber(OPS[i + 1])]
  if op == 'h' or op == 'H' then
    local count = tonumber(OPS[i + 2])
    i = i + 3
    local created = false
    for _ = 1, count do
      local by = OPS[i + 1]
      if redis.call('HINCRBY', key, OPS[i], by) == tonumber(by) then created = true end
      i = i + 2
    end
    if created then redis.call('EXPIRE', key, op == 'h' and ${DAYS_KEPT_S} or ${HOURS_KEPT_S}) end
  elseif op == 'l' or op == 'r' then
    local keep = op == 'l' and ${REQUEST_LOG_KEPT} or ${REJECTIONS_KEPT}
    local count = tonumber(OPS[i + 2])
    local from = tonumber(OPS[i + 3])
    i = i + 4
    local length = redis.call('LPUSH', key, unpack(ARGV, from, from + count - 1))
    if length > keep then redis.call('LTRIM', key, 0, keep - 1) end
    redis.call('EXPIRE', key, op == 'l' and ${LOG_KEPT_S} or ${REJECTIONS_KEPT_S})
  elseif op == 'u' then
    local keyId, at, address = OPS[i + 2], OPS[i + 3], OPS[i + 4]
    i = i + 5
    local current = redis.call('HGET', key, keyId)
    local previous = current and tonumber(string.match(current, '^(%d+)'))
    if (not previous) or previous <= tonumber(at) then
      redis.call('HSET', key, keyId, at .. ' ' .. address)
      if (not previous) or math.floor(previous / 86400000) ~= math.floor(tonumber(at) / 86400000) then
        redis.call('EXPIRE', key, ${DAYS_KEPT_S})
      end
    end
  elseif op == 's' then
    redis.call('SET', key, OPS[i + 2], 'EX', ${DAYS_KEPT_S}, 'NX')
    i = i + 3
  else
    return redis.error_reply('STATS_WRITE: unknown operation ' .. tostring(op))
  end
end
return 1
`;

// KEYS: hashes of one account (one hash slot). ARGV: the group of each key (a day or an hour), in the same
// order. Returns "group NUL field NUL sum NUL ...": the hashes' fields summed per group, as one string (groups
// and fields are names shelfapi makes, never holding a NUL). As an array of three strings per sum, the client
// spent 14% of a 90-day overview's CPU building the strings one by one (docs/performance.md). The overview's
// 90 days of 20 keys were 1,800 HGETALLs (and 1,820 more for the outcomes), each read and parsed by the
// client (~15 µs of its CPU each). A call takes at most SUM_KEYS_PER_CALL keys, so that Redis, which runs a
// script without serving anyone else, is held about as long as by a pipeline's batch of commands.
const SUM_HASHES = `
local sums = {}
for i, key in ipairs(KEYS) do
  local group = ARGV[i]
  local into = sums[group]
  if into == nil then
    into = {}
    sums[group] = into
  end
  local fields = redis.call('HGETALL', key)
  for j = 1, #fields, 2 do
    local field = fields[j]
    into[field] = (into[field] or 0) + tonumber(fields[j + 1])
  end
end
local out = {}
for group, fields in pairs(sums) do
  for field, n in pairs(fields) do
    out[#out + 1] = group
    out[#out + 1] = field
    out[#out + 1] = string.format('%.0f', n)
  end
end
return table.concat(out, '\\0')
`;
/** Hashes summed per script call: one key's 90 days. */
export const SUM_KEYS_PER_CALL = 100;

// KEYS: 1 an account's day total, then its keys' hashes of that day. ARGV: 1 the total's time to live in ms,
// then per key hash its fields' prefix (`` for the usage buckets, `o:` for the outcomes). Replaces the total
// with the keys' sum and marks it complete (`_c`), unless it is already: one script, so no flush (itself one
// script per account) falls between the sum and the write, and one that comes after adds to a complete total.
const FILL_TOTAL = `
if redis.call('HEXISTS', KEYS[1], '_c') == 1 then return 0 end
local sums = {}
for i = 2, #KEYS do
  local prefix = ARGV[i]
  local fields = redis.call('HGETALL', KEYS[i])
  for j = 1, #fields, 2 do
    local field = prefix .. fields[j]
    sums[field] = (sums[field] or 0) + tonumber(fields[j + 1])
  end
end
redis.call('DEL', KEYS[1])
local args = { '_c', '1' }
for field, n in pairs(sums) do
  args[#args + 1] = field
  args[#args + 1] = string.format('%.0f', n)
end
redis.call('HSET', KEYS[1], unpack(args))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`;

/** The field that marks an account's day total filled from its keys' hashes (FILL_TOTAL). */
export const COMPLETE = '_c';

export const SCRIPTS = { statsWrite: { lua: STATS_WRITE }, statsSumHashes: { lua: SUM_HASHES }, statsFillTotal: { lua: FILL_TOTAL } };
