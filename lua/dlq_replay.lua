--[[ sluice: dlq_replay, `sluice dlq replay` (operator script).

Moves dead-lettered jobs of one tenant back to its queue, atomically,
oldest first. Each record's `job` is LPUSHed as it was pushed, so a
replayed job goes behind what is already queued and its attempts count
afresh (it gets a new claim record). Records that do not decode as JSON
or carry no string `job` are left in the dlq, in their order, and
counted as skipped; they do not count towards `count`.

KEYS  1 dlq (LIST, newest at the left)  2 queue (LIST)
ARGV  1 count: most jobs to replay (0: all)
Reply {replayed, skipped}
]]

local K_DLQ, K_QUEUE = KEYS[1], KEYS[2]
local count = tonumber(ARGV[1]) or 0
-- Records are popped before their jobs are pushed, and a script's writes
-- are not undone when a later command fails: make sure none can fail
-- first. (Redis refuses a writing script when out of memory before it runs.)
local queue_type = redis.call('TYPE', K_QUEUE)['ok']
if queue_type ~= 'list' and queue_type ~= 'none' then
  return redis.error_reply('ERR dlq_replay: ' .. K_QUEUE .. ' is a ' .. queue_type .. ', not a list: nothing replayed')
end
local len = redis.call('LLEN', K_DLQ)
local replayed, kept = 0, {}
for _ = 1, len do
  if count > 0 and replayed >= count then break end
  local record = redis.call('RPOP', K_DLQ)
  if not record then break end
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
