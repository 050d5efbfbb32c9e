-- SPDX-License-Identifier: Apache-2.0
-- wrk script for ingest: each thread sends the signed requests that
-- `IngestLoad --wrk-requests N --wrk-directory DIR` wrote to DIR/requests-<thread>.txt, each once
-- (every event id is unique), cycling only if the run outlasts them.
-- Usage: wrk -t2 -c32 -d10s -s Benchmarks/wrk/ingest.lua http://127.0.0.1:8080 -- DIR [DELAY_MS]
-- DELAY_MS paces each connection (fractional values are dithered) to offer a steady rate.

local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("number", counter)
  table.insert(threads, thread)
end

local requests = {}
local nextIndex = 0
local delayMs = 0

function init(args)
  local directory = args[1] or "wrk-requests"
  delayMs = tonumber(args[2] or "0")
  local file = assert(io.open(directory .. "/requests-" .. number .. ".txt", "r"))
  local path = file:read("*l")
  while true do
    local signature = file:read("*l")
    local body = file:read("*l")
    if not body then break end
    local headers = { ["Content-Type"] = "application/json" }
    if string.sub(signature, 1, 7) == "Bearer " then
      headers["Authorization"] = signature
    elseif signature ~= "-" then
      headers["Stripe-Signature"] = signature
    end
    requests[#requests + 1] = wrk.format("POST", path, headers, body)
  end
  file:close()
  wrapped = 0
end

function request()
  nextIndex = nextIndex + 1
  if nextIndex > #requests then
    nextIndex = 1
    wrapped = wrapped + 1
  end
  return requests[nextIndex]
end

function delay()
  if delayMs <= 0 then return 0 end
  local whole = math.floor(delayMs)
  if math.random() < delayMs - whole then whole = whole + 1 end
  return whole
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout + summary.errors.status
  local repeated = 0
  for _, thread in ipairs(threads) do repeated = repeated + thread:get("wrapped") end
  io.write(string.format(
    "RESULT requests=%d rate=%.0f p50=%.2f p99=%.2f p999=%.2f errors=%d wrapped=%d\n",
    summary.requests, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
    errors, repeated))
end
