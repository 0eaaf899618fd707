--[[ sluice: ack, the daemon's batch of delivery outcomes (internal script).

Applies what happened to claimed jobs of one tenant, in one round trip.
An op applies only while the job still holds the lease it was claimed
with: a lease that expired and was claimed again belongs to someone else.

KEYS  1 inflight (ZSET)  2 jobs (HASH)  3 retry (ZSET)  4 dlq (LIST)  5 shape (HASH)
ARGV  1 tenant, then ops, each a name and its fields:
        done    id lease                      delivered: forget the job
        retry   id lease delay_us error       attempted and failed: retry after delay
        release id lease order_us             not sent (shutdown, a pause): back,
                                              due now + order_us, which keeps
                                              the order of a batch handed back
        dead    id lease reason http_status attempted error
                                              dead-letter (attempted: 1 if an
                                              HTTP attempt was made, counted)
        pause   delay_us                      no slot before now + delay_us
Reply {applied, stale}

Cost: the ops are read first (an unknown or short op fails the batch
before anything is written); the leases of the whole batch are then
checked with one ZMSCORE and their records read with one HMGET; the ops are then applied in order in Lua, and
their writes go out as one ZREM, HDEL, HSET, ZADD and LPUSH each. An op
that takes a job removes its lease, so a later op of the batch on the same
job finds none, as it would one call at a time.
]]

-- sluice:include shaping
-- sluice:include dead_letter
-- sluice:include job_record

local K_INFLIGHT, K_JOBS, K_RETRY, K_DLQ, K_SHAPE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tenant = ARGV[1]
local BATCH_ARGS = 4000 -- arguments per variadic call: even (pairs), far below Lua's unpack limit
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function fmt(n) return string.format('%d', n) end

-- `command key args...` in calls of at most BATCH_ARGS arguments (none
-- when args is empty); the replies of the calls that return arrays,
-- concatenated (false: nil).
local function redis_batch(command, key, args)
  if #args == 0 then return {} end
  if #args <= BATCH_ARGS then return redis.call(command, key, unpack(args)) end -- the usual case
  local replies = {}
  for first = 1, #args, BATCH_ARGS do
    local reply = redis.call(command, key, unpack(args, first, math.min(first + BATCH_ARGS - 1, #args)))
    if type(reply) == 'table' then
      for i = 1, #reply do replies[#replies + 1] = reply[i] end
    end
  end
  return replies
end

local WIDTH = {done = 3, retry = 5, release = 4, dead = 7, pause = 2} -- an op's arguments, its name included

-- The ops' positions in ARGV, in order, and the ids of those on a job:
-- op k names ids[job_of[k]] (job_of[k] false: a pause).
local ops, job_of, ids = {}, {}, {}
local i = 2
while i <= #ARGV do
  local width = WIDTH[ARGV[i]]
  if not width then return redis.error_reply('ERR ack: unknown op ' .. tostring(ARGV[i])) end
  if not ARGV[i + width - 1] then return redis.error_reply('ERR ack: op ' .. ARGV[i] .. ' lacks fields') end
  ops[#ops + 1] = i
  if width == 2 then
    job_of[#ops] = false
  else
    ids[#ids + 1] = ARGV[i + 1]
    job_of[#ops] = #ids
  end
  i = i + width
end

-- Which ops present the lease their job holds (by ZMSCORE: the score
-- reads as the same digits unless Redis wrote it another way, then as
-- numbers), and those jobs' records (one HMGET): record_of[k] indexes
-- records for op k, false when its lease is not held.
local scores = redis_batch('ZMSCORE', K_INFLIGHT, ids)
local record_of, wanted = {}, {}
for k = 1, #ops do
  local j, lease = job_of[k], ARGV[ops[k] + 2]
  local score = j and scores[j]
  if score and (score == lease or tonumber(score) == tonumber(lease)) then
    wanted[#wanted + 1] = ids[j]
    record_of[k] = #wanted
  else
    record_of[k] = false
  end
end
local records = redis_batch('HMGET', K_JOBS, wanted)

-- What the batch writes, gathered and written once at its end.
local inflight_removed, jobs_deleted, jobs_set, retry_added, dlq_records = {}, {}, {}, {}, {}
local taken = {} -- ids whose lease an earlier op of the batch removed

-- The record of op k's job if the op holds its lease, else nil; the lease
-- is gone once taken. A record this version cannot read stays leased:
-- when the lease expires, claim.lua dead-letters it whole.
local function take(k, id)
  if not record_of[k] or taken[id] then return nil end
  local record = records[record_of[k]]
  if record and not job_record_valid(record) then return nil end
  inflight_removed[#inflight_removed + 1] = id
  taken[id] = true
  return record or nil
end

local applied, stale = 0, 0
for k = 1, #ops do
  local at = ops[k]
  local op = ARGV[at]
  if op == 'pause' then
    -- No slot before the pause ends: the schedule restarts there.
    local paused = shaping_pause(shaping_load(K_SHAPE), now + tonumber(ARGV[at + 1]))
    if paused then shaping_store(K_SHAPE, paused) end
    applied = applied + 1
  else
    local id = ARGV[at + 1]
    local record = take(k, id)
    if not record then
      stale = stale + 1
    elseif op == 'done' then
      jobs_deleted[#jobs_deleted + 1] = id
    elseif op == 'release' then
      retry_added[#retry_added + 1] = fmt(now + tonumber(ARGV[at + 3]))
      retry_added[#retry_added + 1] = id
    else -- retry, dead: the record is read
      local attempts, first_seen, job = job_record_decode(record)
      if op == 'retry' then
        jobs_set[#jobs_set + 1] = id
        jobs_set[#jobs_set + 1] = job_record_encode(attempts + 1, first_seen, job)
        retry_added[#retry_added + 1] = fmt(now + tonumber(ARGV[at + 3]))
        retry_added[#retry_added + 1] = id
      else
        jobs_deleted[#jobs_deleted + 1] = id
        dlq_records[#dlq_records + 1] = dead_letter_record(tenant, ARGV[at + 3], job, id,
          tonumber(ARGV[at + 4]), ARGV[at + 6], attempts + tonumber(ARGV[at + 5]), first_seen, now)
      end
    end
    if record then applied = applied + 1 end
  end
end

redis_batch('ZREM', K_INFLIGHT, inflight_removed)
redis_batch('HDEL', K_JOBS, jobs_deleted)
redis_batch('HSET', K_JOBS, jobs_set)
redis_batch('ZADD', K_RETRY, retry_added)
redis_batch('LPUSH', K_DLQ, dlq_records)
return {applied, stale}
