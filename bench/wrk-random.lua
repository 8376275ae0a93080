-- Random ids and random keys for wrk: paths come from PATHS or PATHS_FILE (with {id} replaced by 1..IDS), keys from
-- KEYS_FILE, one per line. HOT_SHARE (0 to 1, default 0) sends that share of the requests with the file's first key: one
-- account sending a tenth of all traffic (HOT_SHARE=0.1), the rest spread over the others. Prints a JSON summary on stdout when done.
local paths, keys = {}, {}
local ids = tonumber(os.getenv("IDS") or "1000000")
-- PATHS_FILE (one path a line) holds lists too long for an environment variable (data-drawn searches).
local paths_file = os.getenv("PATHS_FILE")
if paths_file then
  for line in io.lines(paths_file) do if #line > 0 then table.insert(paths, line) end end
else
  for p in string.gmatch(os.getenv("PATHS") or "/", "[^|]+") do table.insert(paths, p) end
end
local keys_file = os.getenv("KEYS_FILE")
if keys_file then for line in io.lines(keys_file) do if #line > 0 then table.insert(keys, line) end end end

local hot_share = tonumber(os.getenv("HOT_SHARE") or "0")

local thread_counter = 0
local threads = {}
function setup(thread)
  thread_counter = thread_counter + 1
  thread:set("seed", thread_counter)
  table.insert(threads, thread)
end

-- COUNT_STATUSES=1: each status counted (the flood scenario's 200/429/503). Off otherwise: a response()
-- function makes wrk parse every response, which the throughput scenarios should not pay for.
statuses = {}
if os.getenv("COUNT_STATUSES") then
  response = function(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
  end
end

function init(args)
  math.randomseed(os.time() + (seed or 0) * 7919)
end

request = function()
  local path = paths[math.random(#paths)]
  path = string.gsub(path, "{id}", tostring(math.random(ids)))
  local headers = {}
  if #keys > 0 then
    if hot_share > 0 and math.random() < hot_share then headers["X-API-Key"] = keys[1]
    else headers["X-API-Key"] = keys[math.random(#keys)] end
  end
  return wrk.format("GET", path, headers)
end

done = function(summary, latency, requests)
  local non2xx = summary.errors.status
  local counted = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses") or {}) do counted[status] = (counted[status] or 0) + n end
  end
  local parts = {}
  for status, n in pairs(counted) do table.insert(parts, string.format('"%d":%d', status, n)) end
  io.write(string.format('{"requests":%d,"durationUs":%d,"rps":%.1f,"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d,"non2xx":%d,"socketErrors":%d,"statuses":{%s}}\n',
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, non2xx,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, table.concat(parts, ",")))
end
