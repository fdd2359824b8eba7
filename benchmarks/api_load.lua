-- wrk script of benchmarks/api_load.py: the dashboard's weighted polling mix, token auth.
--
--   wrk -t2 -c50 -d30s --latency -s benchmarks/api_load.lua http://127.0.0.1:8765 -- TOKEN ID [ID ...]
--
-- Each request picks a random path of MIX (weights as api_load.py's MIX) for a random
-- stream id of the arguments. done() prints one RESULT line: requests, duration,
-- latency percentiles, and errors (any status >= 300, plus wrk's socket errors).

local MIX = {
  {3, "/api/v1/streams/"},
  {3, "/api/v1/streams/%d/"},
  {3, "/api/v1/streams/%d/partitions/?ordering=-lag"},
  {2, "/api/v1/streams/%d/lag/?since=-10m"},
  {1, "/api/v1/streams/%d/lineage/?since=-10m"},
  {1, "/api/v1/streams/%d/transitions/"},
  {1, "/api/v1/streams/%d/errors/"},
}

local threads = {}
local paths = {}
local headers = {}
bad = 0  -- globals: done() reads them from each thread with thread:get()
bad_statuses = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  headers["Authorization"] = "Token " .. args[1]
  headers["Accept"] = "application/json"
  for i = 2, #args do
    local id = tonumber(args[i])
    for _, entry in ipairs(MIX) do
      for _ = 1, entry[1] do
        table.insert(paths, string.format(entry[2], id))
      end
    end
  end
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
end

function request()
  return wrk.format("GET", paths[math.random(#paths)], headers)
end

function response(status, headers, body)
  if status >= 300 then
    bad = bad + 1
    bad_statuses[tostring(status)] = true
  end
end

function done(summary, latency, requests)
  local status_errors = 0
  local seen, examples = {}, {}
  for _, thread in ipairs(threads) do
    status_errors = status_errors + thread:get("bad")
    for status, _ in pairs(thread:get("bad_statuses")) do
      if not seen[status] then
        seen[status] = true
        table.insert(examples, status)
      end
    end
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f p50=%.1f p90=%.1f p99=%.1f max=%.1f status_errors=%d " ..
    "connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration / 1e6,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, status_errors, e.connect, e.read, e.write, e.timeout))
  if #examples > 0 then
    io.write("BAD statuses " .. table.concat(examples, " ") .. "\n")
  end
end
