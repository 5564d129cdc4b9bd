-- wrk script: POST /messages as `msgline bench`'s send scenario makes it (a new
-- Idempotency-Key on every request, `from`, no `channel`, 5,000 recipients in turn).
-- MSGLINE_KEY holds the API key; the line's number is +12015550100.
--   MSGLINE_KEY=mlk_… wrk -t2 -c32 -d10s -s scripts/wrk/send.lua --latency http://127.0.0.1:8080
local counter = 0
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  key = os.getenv("MSGLINE_KEY")
  run = tostring(os.time())
end
function request()
  counter = counter + 1
  local n = counter * 2 + tid
  local to = string.format("+1201555%04d", 1000 + n % 5000)
  local body = string.format('{"to":"%s","from":"+12015550100","body":"bench message %d"}', to, n)
  return wrk.format("POST", "/api/v1/messaging/messages", {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = run .. "-" .. tid .. "-" .. counter,
  }, body)
end
