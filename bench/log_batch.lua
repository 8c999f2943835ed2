-- wrk script: POST runs/log-batch with METRICS metrics per request to the run ids in RUN_IDS
-- (comma separated, one per connection in turn). Steps increase so no point is a duplicate.
-- AUTHORIZATION, when set, is sent as the Authorization header.
local metrics_per_request = tonumber(os.getenv("METRICS") or "1000")
local headers = {["Content-Type"] = "application/json"}
if os.getenv("AUTHORIZATION") then headers["Authorization"] = os.getenv("AUTHORIZATION") end
local run_ids = {}
for id in string.gmatch(os.getenv("RUN_IDS") or "", "[^,]+") do table.insert(run_ids, id) end
local counter = 0
local thread_seed = 0

function setup(thread)
  thread_seed = thread_seed + 1
  thread:set("seed", thread_seed)
end

function init(args)
  counter = (seed or 1) * 1000000000
end

function request()
  counter = counter + 1
  local run_id = run_ids[(counter % #run_ids) + 1]
  local parts = {}
  local base = counter * metrics_per_request
  for i = 1, metrics_per_request do
    parts[i] = string.format('{"key":"m%d","value":%d.5,"timestamp":1700000000000,"step":%d}',
                             i % 10, i, base + i)
  end
  local body = '{"run_id":"' .. run_id .. '","metrics":[' .. table.concat(parts, ",") .. ']}'
  return wrk.format("POST", "/api/2.0/mlflow/runs/log-batch", headers, body)
end

function response(status, headers, body)
  if status ~= 200 then
    io.stderr:write("log-batch answered " .. status .. ": " .. body .. "\n")
  end
end
