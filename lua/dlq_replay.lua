--[[ sluice: dlq_replay, `sluice dlq replay` (operator script).

Moves dead-lettered jobs of one tenant back to its queue, atomically,
oldest first. Each record's `job` is LPUSHed as it was pushed, so a
replayed job goes behind what is already queued and its attempts count
afresh (it gets a new claim record). Records that do not decode as JSON
or carry no string `job` are left in the dlq, in their order, at its
right (oldest) end, and counted as skipped.

One call takes at most `count` records, so that a long dlq can be
replayed in steps that each block Redis briefly: `sluice dlq replay`
calls it in steps of 1000, passing as `skip` the undecodable records
earlier steps left at the right end, which this call then passes over
(popped and pushed back undecoded) instead of taking them again.

KEYS  1 dlq (LIST, newest at the left)  2 queue (LIST)
ARGV  1 count: most records to take, replayed or skipped (0: all)
      2 skip (optional, default 0): records at the right end to pass over
Reply {replayed, skipped}: skipped counts the undecodable records now at
      the right end, the `skip` passed over included
]]

local K_DLQ, K_QUEUE = KEYS[1], KEYS[2]
local count = tonumber(ARGV[1]) or 0
local skip = tonumber(ARGV[2]) or 0
-- Records are popped before their jobs are pushed, and a script's writes
-- are not undone when a later command fails: make sure none can fail
-- first. (Redis refuses a writing script when out of memory before it runs.)
local queue_type = redis.call('TYPE', K_QUEUE)['ok']
if queue_type ~= 'list' and queue_type ~= 'none' then
  return redis.error_reply('ERR dlq_replay: ' .. K_QUEUE .. ' is a ' .. queue_type .. ', not a list: nothing replayed')
end
local len = redis.call('LLEN', K_DLQ)
local kept = {}
for _ = 1, math.min(skip, len) do
  kept[#kept + 1] = redis.call('RPOP', K_DLQ)
end
local replayed, taken = 0, 0
for _ = 1, len - #kept do
  if count > 0 and taken >= count then break end
  local record = redis.call('RPOP', K_DLQ)
  if not record then break end
  taken = taken + 1
  local ok, decoded = pcall(cjson.decode, record)
  if ok and type(decoded) == 'table' and type(decoded.job) == 'string' then
    redis.call('LPUSH', K_QUEUE, decoded.job)
    replayed = replayed + 1
  else
    kept[#kept + 1] = record
  end
end
-- Back to the right end, the oldest skipped record rightmost again.
for i = #kept, 1, -1 do
  redis.call('RPUSH', K_DLQ, kept[i])
end
return {replayed, #kept}
