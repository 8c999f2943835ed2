-- wrk script: POST runs/log-metric, one point per request, to the run in RUN_IDS.
local run_id = string.match(os.getenv("RUN_IDS") or "", "[^,]+")
local counter = 0

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
