-- wrk script for benches/flood.sh: POSTs the JSON body in $WRK_BODY_FILE with the header
-- `Authorization: $WRK_AUTHORIZATION`, waits $WRK_DELAY_MS (default 0) before each request
-- (so a closed loop of few connections sends a modest, steady rate), counts the responses by
-- HTTP status, and when done prints one JSON line: totals, latency percentiles (microseconds)
-- and the count of every status. wrk runs this file once per thread and once more for `done`.
local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = os.getenv("WRK_AUTHORIZATION")
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
end

function delay()
  return pause
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local counts = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      counts[status] = (counts[status] or 0) + n
    end
  end
  local parts = {}
  for status, n in pairs(counts) do
    table.insert(parts, string.format('"%d":%d', status, n))
  end
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d,"statuses":{%s}}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), table.concat(parts, ",")))
end
