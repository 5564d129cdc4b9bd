-- Shared by the wrk scripts (msgline bench appends it): one JSON line with what the run did,
-- which the bench reads instead of wrk's text.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"failed":%d,"micros":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d}\n',
    summary.requests, e.connect + e.read + e.write + e.status + e.timeout, summary.duration,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
