--[[ sluice: claim, the daemon's one round trip per batch (internal script).

Claims the jobs of one tenant that depart within a short lookahead: gives
each its slot on the tenant's shaping schedule, checks the tenant's stacked
limits at that slot (all pass, then all commit), dead-letters what has
expired or overflowed, and leases the claimed jobs until they are acked.
The algorithms are not written again here: the build splices in the model
sections of lua/shaping.lua and the limit scripts (see tools/embed_lua.c).

KEYS  1 queue (LIST)  2 shape (HASH)  3 inflight (ZSET)  4 jobs (HASH)
      5 retry (ZSET)  6 dlq (LIST)    7.. one key per limit, in ARGV order
ARGV  1 capacity  2 rate_milli  3 overflow ("wait" | "dead-letter")
      4 max_wait_us (0: none)  5 lookahead_us  6 batch (most jobs to claim)
      7 lease_us (inflight deadline = slot + lease_us)  8 id_prefix (random,
      new for every call)  9 tenant  10 format ("envelope" | "raw")
      11 refill_us (see next_us)
      12 limit count, then 5 per limit: name, type, first, second, on_deny
      (first, second as the limit's script takes them; rates in milli-jobs/s)
Reply {now_us, next_us, queue_len, reaped, dead_lettered,
       {reason, count, ...} (the dead letters by reason, in order of first use),
       then 6 per claimed job: id, slot_us, lease, attempts, first_seen_us, job}
      next_us: when to claim again (<= now: at once; 0: the tenant is idle).
      Past the lookahead, that is when the next slot is refill_us away:
      each claim then gathers lookahead - refill of jobs (claiming as soon
      as one slot came within reach took about one job per claim), and
      refill_us is the time a claim has to come back before the slot.

Records in `jobs`: see lua/job_record.lua. Expired
leases (a worker died) go to `retry`, due now: retries are claimed before
new jobs, and keep their id (Idempotency-Key), attempts and first-seen time.
]]

-- sluice:include shaping
-- sluice:include policing
-- sluice:include token_bucket
-- sluice:include fixed_window
-- sluice:include sliding_window_log
-- sluice:include sliding_window_counter
-- sluice:include dead_letter
-- sluice:include job_record

-- The limit types, each the model of lua/NAME.lua spliced in above:
-- NAME_load, NAME_decide and NAME_store.
local ALGORITHMS = {
  policing = {load = policing_load, decide = policing_decide, store = policing_store},
  token_bucket = {load = token_bucket_load, decide = token_bucket_decide, store = token_bucket_store},
  fixed_window = {load = fixed_window_load, decide = fixed_window_decide, store = fixed_window_store},
  sliding_window_log = {load = sliding_window_log_load, decide = sliding_window_log_decide,
    store = sliding_window_log_store},
  sliding_window_counter = {load = sliding_window_counter_load, decide = sliding_window_counter_decide,
    store = sliding_window_counter_store},
}

local K_QUEUE, K_SHAPE, K_INFLIGHT, K_JOBS, K_RETRY, K_DLQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local capacity, rate_milli = tonumber(ARGV[1]), tonumber(ARGV[2])
local overflow_dead_letter = ARGV[3] == 'dead-letter'
local max_wait_us, lookahead_us = tonumber(ARGV[4]), tonumber(ARGV[5])
local batch, lease_us = tonumber(ARGV[6]), tonumber(ARGV[7])
local id_prefix, tenant, envelope = ARGV[8], ARGV[9], ARGV[10] == 'envelope'
local refill_us = math.min(tonumber(ARGV[11]), lookahead_us)

local limits = {}
for i = 1, tonumber(ARGV[12]) do
  local at = 12 + (i - 1) * 5
  local algorithm = ALGORITHMS[ARGV[at + 2]]
  if not algorithm then return redis.error_reply('ERR claim: unknown limit type ' .. tostring(ARGV[at + 2])) end
  limits[i] = {key = KEYS[6 + i], name = ARGV[at + 1], algorithm = algorithm,
    first = tonumber(ARGV[at + 3]), second = tonumber(ARGV[at + 4]), delay = ARGV[at + 5] ~= 'dead-letter'}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function fmt(n) return string.format('%d', n) end

local dead_lettered, dead_reasons = 0, {}
local function dead_letter(job, reason, attempts, first_seen, message, id)
  redis.call('LPUSH', K_DLQ, dead_letter_record(tenant, reason, job, id, nil, message, attempts,
    first_seen, now))
  dead_lettered = dead_lettered + 1
  for i = 1, #dead_reasons, 2 do
    if dead_reasons[i] == reason then dead_reasons[i + 1] = dead_reasons[i + 1] + 1 return end
  end
  dead_reasons[#dead_reasons + 1] = reason
  dead_reasons[#dead_reasons + 1] = 1
end

-- Leases past their deadline: the worker holding them is gone.
local reaped = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_INFLIGHT, '-inf', fmt(now), 'LIMIT', 0, 1000)) do
  redis.call('ZREM', K_INFLIGHT, id)
  redis.call('ZADD', K_RETRY, fmt(now), id)
  reaped = reaped + 1
end

-- The classic leaky bucket: what the bucket holds beyond capacity (queued,
-- retrying, claimed but not departed) is dropped, newest first.
if overflow_dead_letter then
  local level = redis.call('LLEN', K_QUEUE) + redis.call('ZCARD', K_RETRY)
    + redis.call('ZCOUNT', K_INFLIGHT, '(' .. fmt(now + lease_us), '+inf')
  for _ = 1, math.min(level - capacity, 1000) do
    dead_letter(redis.call('LPOP', K_QUEUE), 'overflow', 0, now, 'bucket over capacity ' .. capacity)
  end
end

-- A job's own deadline, in us, or nil. Only envelopes that mention one are decoded.
local function job_deadline_us(job)
  if not envelope or not string.find(job, '"deadline"', 1, true) then return nil end
  local ok, decoded = pcall(cjson.decode, job)
  if ok and type(decoded) == 'table' and type(decoded.deadline) == 'number' then
    return decoded.deadline * 1000
  end
  return nil -- malformed: the worker dead-letters it with the precise reason
end

local shape = shaping_load(K_SHAPE)
local shape_changed = false
local schedule_capacity = overflow_dead_letter and capacity or 9000000
for _, limit in ipairs(limits) do limit.state = limit.algorithm.load(limit.key) end

local claimed, next_us = {}, 0
local horizon = now + lookahead_us
for _ = 1, batch * 4 do -- bounded: dead letters do not count against the batch
  if #claimed >= batch then next_us = now break end

  -- The next candidate: a due retry first, else the head of the queue.
  local job, id, attempts, first_seen, due
  local retry = redis.call('ZRANGE', K_RETRY, 0, 0, 'WITHSCORES')
  if retry[1] and tonumber(retry[2]) <= horizon then
    id, due = retry[1], tonumber(retry[2])
    local record = redis.call('HGET', K_JOBS, id)
    if not record then
      redis.call('ZREM', K_RETRY, id) -- nothing to deliver (acked elsewhere)
    else
      attempts, first_seen, job = job_record_decode(record)
      if not job then -- not written by this version's scripts: kept whole, not delivered
        redis.call('ZREM', K_RETRY, id)
        redis.call('HDEL', K_JOBS, id)
        dead_letter(record, 'bad_record', 0, now, 'claim record is not "attempts:first_seen:job"', id)
      end
    end
  else
    job = redis.call('LINDEX', K_QUEUE, -1)
    if not job then
      next_us = retry[1] and tonumber(retry[2]) - lookahead_us or 0
      break
    end
    attempts, first_seen, due = 0, now, now
  end

  if job then
    local allowed, _, wait_us, new_shape = shaping_decide(shape, schedule_capacity, rate_milli, math.max(now, due))
    if allowed == 0 then next_us = now + wait_us break end
    local slot = math.max(now, due) + wait_us
    if slot > horizon then next_us = slot - refill_us break end

    local deadline = job_deadline_us(job)
    local expired = (deadline and slot > deadline) or (max_wait_us > 0 and slot - first_seen > max_wait_us)
    local verdict, delay_until, denied_by = 'claim', nil, nil
    if expired then
      verdict = 'expired'
    else
      -- Every limit must pass at the slot; none commits unless all do.
      for _, limit in ipairs(limits) do
        local ok, _, wait, new_state = limit.algorithm.decide(limit.state, limit.first, limit.second, slot)
        limit.next_state = new_state
        if ok == 0 then
          if limit.delay then
            delay_until = math.max(delay_until or 0, slot + wait)
          else
            denied_by = denied_by or limit.name
          end
        end
      end
      if denied_by then verdict = 'limit' elseif delay_until then verdict = 'hold' end
    end

    if verdict == 'hold' then next_us = delay_until break end -- order kept: the queue waits

    if id then redis.call('ZREM', K_RETRY, id) else redis.call('RPOP', K_QUEUE) end
    if verdict == 'claim' then
      shape, shape_changed = new_shape, true
      for _, limit in ipairs(limits) do
        limit.state = limit.next_state
        limit.algorithm.store(limit.key, limit.state, limit.first, limit.second)
      end
      if not id then
        id = id_prefix .. string.format('%x', #claimed)
        redis.call('HSET', K_JOBS, id, job_record_encode(attempts, first_seen, job))
      end
      local lease = slot + lease_us
      redis.call('ZADD', K_INFLIGHT, fmt(lease), id)
      claimed[#claimed + 1] = {id, slot, lease, attempts, first_seen, job}
    else
      if id then redis.call('HDEL', K_JOBS, id) end
      if verdict == 'expired' then
        dead_letter(job, 'expired', attempts, first_seen, 'deadline passed before the departure slot', id)
      else
        dead_letter(job, 'limit:' .. denied_by, attempts, first_seen, 'denied by limit ' .. denied_by, id)
      end
    end
  end
  next_us = now -- the loop bound was reached: more may be waiting
end

if shape_changed then shaping_store(K_SHAPE, shape) end

local reply = {now, next_us, redis.call('LLEN', K_QUEUE), reaped, dead_lettered, dead_reasons}
for _, c in ipairs(claimed) do
  for _, field in ipairs(c) do reply[#reply + 1] = field end
end
return reply
