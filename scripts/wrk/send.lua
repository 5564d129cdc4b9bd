-- wrk script: POST /messages as `msgline bench`'s send scenario makes it (a new
-- Idempotency-Key on every request, `from`, no `channel`, 5,000 recipients in turn).
-- MSGLINE_KEY (or MSGLINE_KEYS, comma-separated, taken in turn) holds the API key; the line's
-- number is +12015550100. MSGLINE_NEW_NUMBERS=1 sends each request to a number never used
-- before (the first message to a new number: the line is asked about its reachability).
--   MSGLINE_KEY=mlk_… wrk -t2 -c32 -d10s -s scripts/wrk/send.lua --latency http://127.0.0.1:8080
local counter = 0
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  keys = {}
  for key in string.gmatch(os.getenv("MSGLINE_KEYS") or os.getenv("MSGLINE_KEY") or "", "[^,]+") do
    table.insert(keys, key)
  end
  new_numbers = os.getenv("MSGLINE_NEW_NUMBERS") == "1"
  run = tostring(os.time()) .. "-" .. tostring(math.random(1000000))
end
function request()
  counter = counter + 1
  -- As the bench's two threads take turns (wrk -t2).
  local n = counter * 2 + tid
  local to
  if new_numbers then
    -- Exchanges 200 to 554 of area code 201: never the bench's +1201555xxxx recipients, and
    -- unique for up to 16 threads.
    local m = counter * 16 + tid
    to = string.format("+1201%03d%04d", 200 + math.floor(m / 10000) % 355, m % 10000)
  else
    to = string.format("+1201555%04d", 1000 + n % 5000)
  end
  local body = string.format('{"to":"%s","from":"+12015550100","body":"bench message %d"}', to, n)
  return wrk.format("POST", "/api/v1/messaging/messages", {
    ["Authorization"] = "Bearer " .. keys[1 + counter % #keys],
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = run .. "-" .. tid .. "-" .. counter,
  }, body)
end
