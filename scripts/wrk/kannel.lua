-- wrk script: Kannel's sendsms as `msgline bench`'s kannel scenario asks it (scripts/kannel's
-- sendsms user, 5,000 recipients in turn).
--   wrk -t2 -c32 -d10s -s scripts/wrk/kannel.lua --latency http://127.0.0.1:13013
local counter = 0
function request()
  counter = counter + 1
  local to = string.format("%%2B1201555%04d", 1000 + counter % 5000)
  return wrk.format("GET", "/cgi-bin/sendsms?username=bench&password=bench&from=%2B12015550100&to="
    .. to .. "&text=bench+message+" .. counter)
end
