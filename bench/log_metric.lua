-- wrk script: POST runs/log-metric, one point per request, to the run in RUN_IDS. With PACE_MS
-- set, each connection waits that long after an answer before its next request (wrk's delay()),
-- as many training jobs each logging a point now and then. Steps are unique per thread.
local run_id = string.match(os.getenv("RUN_IDS") or "", "[^,]+")
local pace_ms = tonumber(os.getenv("PACE_MS") or "")
local counter = 0
local thread_seed = 0

function setup(thread)
  thread_seed = thread_seed + 1
  thread:set("seed", thread_seed)
end

function init(args)
  counter = (seed or 1) * 1000000000
end

if pace_ms then
  function delay()
    return pace_ms
  end
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"run_id":"%s","key":"loss","value":0.25,"timestamp":1700000000000,"step":%d}',
    run_id, counter)
  return wrk.format("POST", "/api/2.0/mlflow/runs/log-metric",
                    {["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
  if status ~= 200 then io.stderr:write("log-metric answered " .. status .. "\n") end
end
