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
]]

-- sluice:include shaping
-- sluice:include dead_letter
-- sluice:include job_record

local K_INFLIGHT, K_JOBS, K_RETRY, K_DLQ, K_SHAPE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tenant = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function fmt(n) return string.format('%d', n) end

-- The job's record if it still holds `lease`, else nil. A record this
-- version cannot read stays leased: when the lease expires, claim.lua
-- dead-letters it whole.
local function take(id, lease)
  local score = redis.call('ZSCORE', K_INFLIGHT, id)
  if not score or tonumber(score) ~= tonumber(lease) then return nil end
  local record = redis.call('HGET', K_JOBS, id)
  if not record then
    redis.call('ZREM', K_INFLIGHT, id)
    return nil
  end
  local attempts, first_seen, job = job_record_decode(record)
  if not job then return nil end
  redis.call('ZREM', K_INFLIGHT, id)
  return {attempts = attempts, first_seen = first_seen, job = job}
end

local applied, stale = 0, 0
local i = 2
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'pause' then
    -- No slot before the pause ends: the schedule restarts there.
    local paused = shaping_pause(shaping_load(K_SHAPE), now + tonumber(ARGV[i + 1]))
    if paused then shaping_store(K_SHAPE, paused) end
    applied = applied + 1
    i = i + 2
  else
    local width = ({done = 3, retry = 5, release = 4, dead = 7})[op]
    if not width then return redis.error_reply('ERR ack: unknown op ' .. tostring(op)) end
    local id, lease = ARGV[i + 1], ARGV[i + 2]
    local record = take(id, lease)
    if not record then
      stale = stale + 1
    elseif op == 'done' then
      redis.call('HDEL', K_JOBS, id)
    elseif op == 'retry' or op == 'release' then
      if op == 'retry' then
        record.attempts = record.attempts + 1
        redis.call('HSET', K_JOBS, id, job_record_encode(record.attempts, record.first_seen, record.job))
      end
      redis.call('ZADD', K_RETRY, fmt(now + tonumber(ARGV[i + 3])), id)
    else -- dead
      redis.call('HDEL', K_JOBS, id)
      redis.call('LPUSH', K_DLQ, dead_letter_record(tenant, ARGV[i + 3], record.job, id,
        tonumber(ARGV[i + 4]), ARGV[i + 6], record.attempts + tonumber(ARGV[i + 5]),
        record.first_seen, now))
    end
    if record then applied = applied + 1 end
    i = i + width
  end
end
return {applied, stale}
