--[[ sluice: ack, the daemon's batch of delivery outcomes (internal script).

Applies what happened to claimed jobs of one tenant, in one round trip.
An op applies only while the job still holds the lease it was claimed
with: a lease that expired and was claimed again belongs to someone else.

KEYS  1 inflight (ZSET)  2 jobs (HASH)  3 retry (ZSET)  4 dlq (LIST)  5 shape (HASH)
      6 settings (HASH)  7 events (LIST): read and written only by an adaptive op
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
        now     now_us                        the batch's time, us (default:
                                              Redis TIME; tests pass one)
        adaptive used ok limited timeouts errors_5xx min_milli max_milli
                decrease_permille increase_milli cooldown_us on_timeout on_5xx
                start_rate_milli now_us
                                              the batch's outcomes for the
                                              adaptive rate (below); several
                                              in a batch add up, the last
                                              one's parameters count
Reply {applied, stale}, and with an adaptive op a third element: the
adaptive rate after the batch (milli-jobs/s)

Adaptive rate (issue 16): the tenant's rate, found from the outcomes,
lives in the settings hash (adaptive_rate, milli-jobs/s) where claim.lua
reads it; adaptive_at is the start of the controller's window (Redis time,
us; now_us 0: Redis TIME, tests pass one) and adaptive_used, adaptive_ok,
adaptive_bad sum the window's requests sent, 2xx and refusals (429/503,
timeouts and 5xx when on_timeout, on_5xx are 1). The first batch acked
once the window is cooldown_us old closes it: a refusal in it steps down
(x decrease_permille / 1000), else successes with 4/5 of its slots used
step up (+ increase_milli), else the rate stays; always within
[min_milli, max_milli]. src/job/adaptive.c is the C model, the same
integer arithmetic line by line (tests/test_adaptive_lua.c drives both).
Each change LPUSHes an event (the settings' JSON shape) to KEYS[7],
trimmed to 100.

Which leases are checked: a lease that lies ahead of the batch's now
cannot have been taken by anyone else. Only claim.lua takes a lease from
its holder, and only once it passed (its reaper moves leases with score
<= its now to `retry`); the holder gives it up only by its own op. So a
done op whose lease lies ahead is trusted: its job goes without a check,
and ZREM's count says how many of them still held their job (the rest
are stale: acked already, or named twice). The ops whose lease passed are
checked against the lease the job holds (ZMSCORE). The caveat: should
Redis's clock step back between a reaping claim and an ack, a worker whose
lease was reaped could ack past the check: its done (it delivered the
job) forgets the job another worker holds now, which delivers it anyway.
At worst a duplicate delivery, never a loss. (A holder that names one
lease in two batches' outcomes, a retry then a done, would find the done
applied likewise; the daemon sends one outcome per delivery, and a batch
sent again holds the same ops.)

Cost: the ops are read first (an unknown or short op fails the batch
before anything is written). The usual batch, done ops only, then costs a
ZREM and an HDEL of its jobs (and a ZMSCORE of those whose lease passed).
Any other batch checks the leases of all its jobs with one ZMSCORE and
reads the records of the retry and dead ops with one HMGET (done and
release need none); its ops are then applied in order in Lua, and their
writes go out as one ZREM, HDEL, HSET, ZADD and LPUSH each. An op that
takes a job removes its lease, so a later op of the batch on the same job
finds none, as it would one call at a time.
]]

-- The models spliced in below, built only for a batch that needs them: a
-- pause (shaping), ops that read their record back (apply_job_ops:
-- job_record, dead_letter). Every function a script defines is a closure
-- made anew on every call, and the usual batch of done ops needs none.
local function models()
-- sluice:include shaping
-- sluice:include dead_letter
-- sluice:include job_record
  return {shaping_pause = shaping_pause, shaping_load = shaping_load, shaping_store = shaping_store,
    dead_letter_record = dead_letter_record, job_record_encode = job_record_encode,
    job_record_decode = job_record_decode, job_record_valid = job_record_valid}
end

local K_INFLIGHT, K_JOBS, K_RETRY, K_DLQ, K_SHAPE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tenant = ARGV[1]
local BATCH_ARGS = 4000 -- arguments per variadic call: even (pairs), far below Lua's unpack limit
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- (a now op replaces it)
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

-- redis_batch of a command that answers a count (ZREM): the counts summed.
local function redis_count(command, key, args)
  local count = 0
  for first = 1, #args, BATCH_ARGS do
    count = count + redis.call(command, key, unpack(args, first, math.min(first + BATCH_ARGS - 1, #args)))
  end
  return count
end

local WIDTH = {done = 3, retry = 5, release = 4, dead = 7, pause = 2, adaptive = 15, now = 2} -- an op's arguments, its name included
local NO_JOB = {pause = true, adaptive = true, now = true} -- ops that name no job

-- The ops' positions in ARGV, in order: those on a job (job_ops) and the
-- others (pause, adaptive); only_done: every op on a job is a done. A now
-- op sets the batch's time.
local job_ops, other_ops, only_done = {}, {}, true
local i, argc = 2, #ARGV
while i <= argc do
  local op = ARGV[i]
  local width = WIDTH[op]
  if not width then return redis.error_reply('ERR ack: unknown op ' .. tostring(op)) end
  if not ARGV[i + width - 1] then return redis.error_reply('ERR ack: op ' .. op .. ' lacks fields') end
  if op == 'now' then
    now = tonumber(ARGV[i + 1])
    if not now or now <= 0 then return redis.error_reply('ERR ack: now_us must be a positive integer') end
  elseif NO_JOB[op] then
    other_ops[#other_ops + 1] = i
  else
    job_ops[#job_ops + 1] = i
    only_done = only_done and op == 'done'
  end
  i = i + width
end

-- Whether a score read by ZMSCORE is the lease an op presents: the same
-- digits, unless Redis wrote the score another way, then as numbers.
local function same_lease(score, lease)
  return score and (score == lease or tonumber(score) == tonumber(lease))
end

-- ---- The usual batch: done ops only (see the header) ----

-- Applies a batch whose ops on jobs are all done: a lease that lies ahead
-- of now is trusted, the others are checked (one ZMSCORE); the jobs go
-- with one ZREM and one HDEL, and ZREM's count is the ops that applied.
-- Returns applied, stale.
local function apply_done_ops()
  local gone, passed, passed_leases = {}, {}, {} -- gone: the ids to forget
  for k = 1, #job_ops do
    local at = job_ops[k]
    local lease = ARGV[at + 2]
    local lease_us = tonumber(lease) -- (not a number: checked, and found stale)
    if lease_us and lease_us > now then
      gone[#gone + 1] = ARGV[at + 1]
    else
      passed[#passed + 1], passed_leases[#passed_leases + 1] = ARGV[at + 1], lease
    end
  end
  if #passed > 0 then
    local scores = redis_batch('ZMSCORE', K_INFLIGHT, passed)
    for j = 1, #passed do
      if same_lease(scores[j], passed_leases[j]) then gone[#gone + 1] = passed[j] end
    end
  end
  if #gone == 0 then return 0, #job_ops end
  -- An id twice in the batch is removed once: the second op is stale, as
  -- it would be one call at a time.
  local removed = redis_count('ZREM', K_INFLIGHT, gone)
  redis_batch('HDEL', K_JOBS, gone)
  return removed, #job_ops - removed
end

-- ---- Any other batch: every lease checked, the ops applied in order ----

-- Applies the ops on jobs of a batch that holds a retry, release or dead.
-- Returns applied, stale.
local function apply_job_ops()
  local m = models()
  -- Which ops present the lease their job holds (one ZMSCORE), and the
  -- records of those that read their job back (one HMGET): record_of[k]
  -- indexes records for op k, 0 when the op holds the lease but needs no
  -- record (done forgets the job, release moves its id: reading the job's
  -- bytes for them would cost a copy per delivered job), false when its
  -- lease is not held.
  local ids = {}
  for k = 1, #job_ops do ids[k] = ARGV[job_ops[k] + 1] end
  local NEEDS_RECORD = {retry = true, dead = true}
  local scores = redis_batch('ZMSCORE', K_INFLIGHT, ids)
  local record_of, wanted = {}, {}
  for k = 1, #job_ops do
    local at = job_ops[k]
    if not same_lease(scores[k], ARGV[at + 2]) then
      record_of[k] = false
    elseif NEEDS_RECORD[ARGV[at]] then
      wanted[#wanted + 1] = ids[k]
      record_of[k] = #wanted
    else
      record_of[k] = 0
    end
  end
  local records = redis_batch('HMGET', K_JOBS, wanted)

  -- What the batch writes, gathered and written once at its end.
  local inflight_removed, jobs_deleted, jobs_set, retry_added, dlq_records = {}, {}, {}, {}, {}
  local taken = {} -- ids whose lease an earlier op of the batch removed

  -- The record of op k's job if the op holds its lease (true for an op that
  -- reads no record), else nil; the lease is gone once taken. A record this
  -- version cannot read stays leased: when the lease expires, claim.lua
  -- dead-letters it whole.
  local function take(k, id)
    local at = record_of[k]
    if not at or taken[id] then return nil end
    local record = true
    if at > 0 then
      record = records[at]
      if record and not m.job_record_valid(record) then return nil end
    end
    inflight_removed[#inflight_removed + 1] = id
    taken[id] = true
    return record or nil
  end

  local applied, stale = 0, 0
  for k = 1, #job_ops do
    local at = job_ops[k]
    local op, id = ARGV[at], ids[k]
    local record = take(k, id)
    if not record then
      stale = stale + 1
    elseif op == 'done' then
      jobs_deleted[#jobs_deleted + 1] = id
    elseif op == 'release' then
      retry_added[#retry_added + 1] = fmt(now + tonumber(ARGV[at + 3]))
      retry_added[#retry_added + 1] = id
    else -- retry, dead: the record is read
      local attempts, first_seen, job = m.job_record_decode(record)
      if op == 'retry' then
        jobs_set[#jobs_set + 1] = id
        jobs_set[#jobs_set + 1] = m.job_record_encode(attempts + 1, first_seen, job)
        retry_added[#retry_added + 1] = fmt(now + tonumber(ARGV[at + 3]))
        retry_added[#retry_added + 1] = id
      else
        jobs_deleted[#jobs_deleted + 1] = id
        dlq_records[#dlq_records + 1] = m.dead_letter_record(tenant, ARGV[at + 3], job, id,
          tonumber(ARGV[at + 4]), ARGV[at + 6], attempts + tonumber(ARGV[at + 5]), first_seen, now)
      end
    end
    if record then applied = applied + 1 end
  end

  redis_batch('ZREM', K_INFLIGHT, inflight_removed)
  redis_batch('HDEL', K_JOBS, jobs_deleted)
  redis_batch('HSET', K_JOBS, jobs_set)
  redis_batch('ZADD', K_RETRY, retry_added)
  redis_batch('LPUSH', K_DLQ, dlq_records)
  return applied, stale
end

local applied, stale = 0, 0
if #job_ops > 0 then
  if only_done then applied, stale = apply_done_ops() else applied, stale = apply_job_ops() end
end

-- ---- pause and adaptive: ops on no job ----

local adaptive -- the adaptive ops' summed counts and the last one's position
local m -- models(), once a pause needs them
for k = 1, #other_ops do
  local at = other_ops[k]
  if ARGV[at] == 'adaptive' then
    adaptive = adaptive or {used = 0, ok = 0, limited = 0, timeouts = 0, errors_5xx = 0}
    adaptive.used = adaptive.used + tonumber(ARGV[at + 1])
    adaptive.ok = adaptive.ok + tonumber(ARGV[at + 2])
    adaptive.limited = adaptive.limited + tonumber(ARGV[at + 3])
    adaptive.timeouts = adaptive.timeouts + tonumber(ARGV[at + 4])
    adaptive.errors_5xx = adaptive.errors_5xx + tonumber(ARGV[at + 5])
    adaptive.at = at
  else -- pause: no slot before the pause ends, the schedule restarts there
    m = m or models()
    local paused = m.shaping_pause(m.shaping_load(K_SHAPE), now + tonumber(ARGV[at + 1]))
    if paused then m.shaping_store(K_SHAPE, paused) end
    applied = applied + 1
  end
end

-- ---- the adaptive rate: src/job/adaptive.c's twin, change both ----
-- (Defined only for a batch with an adaptive op: every function a script
-- defines is a closure made anew on every call.)

if adaptive then
  if not KEYS[6] then return redis.error_reply('ERR ack: an adaptive op needs the settings key') end

  local ADAPTIVE_WINDOW_MAX_US = 3600000000 -- SL_ADAPTIVE_WINDOW_MAX_US
  local ADAPTIVE_FIELDS = {'adaptive_rate', 'adaptive_at', 'adaptive_used', 'adaptive_ok', 'adaptive_bad'}

  local function clamp(v, lo, hi)
    if v < lo then return lo elseif v > hi then return hi end
    return v
  end

  -- A stored counter: decimal digits (at most 18), else 0.
  local function stored_int(text)
    if not text or #text > 18 or not string.match(text, '^%d+$') then return 0 end
    return tonumber(text)
  end

  -- milli-jobs/s as jobs/s, as the config writes them: "70", "0.5".
  local function jobs_per_s(milli)
    local text = string.format('%d.%03d', math.floor(milli / 1000), milli % 1000)
    return (string.gsub(string.gsub(text, '0+$', ''), '%.$', ''))
  end

  local function adaptive_step(b, at, k_settings, k_events)
    local min, max = tonumber(ARGV[at + 6]), tonumber(ARGV[at + 7])
    local decrease, increase = tonumber(ARGV[at + 8]), tonumber(ARGV[at + 9])
    local cooldown = tonumber(ARGV[at + 10])
    local on_timeout, on_5xx = ARGV[at + 11] == '1', ARGV[at + 12] == '1'
    local start, t_now = tonumber(ARGV[at + 13]), tonumber(ARGV[at + 14])
    if t_now <= 0 then t_now = now end
    local st = redis.call('HMGET', k_settings, unpack(ADAPTIVE_FIELDS))
    local rate, window_at = stored_int(st[1]), stored_int(st[2])
    local used, ok, bad = stored_int(st[3]), stored_int(st[4]), stored_int(st[5])
    if rate <= 0 then
      rate, window_at, used, ok, bad = clamp(start, min, max), t_now, 0, 0, 0
    end
    used = used + b.used
    ok = ok + b.ok
    bad = bad + b.limited + (on_timeout and b.timeouts or 0) + (on_5xx and b.errors_5xx or 0)
    local old = rate
    if t_now - window_at < cooldown then
      rate = clamp(old, min, max)
    else
      local elapsed = clamp(t_now - window_at, 0, ADAPTIVE_WINDOW_MAX_US)
      local slots_milli = math.floor(old * math.floor(elapsed / 1000) / 1000)
      if bad > 0 then
        rate = math.floor(old * decrease / 1000)
      elseif ok > 0 and used * 1000 * 5 >= slots_milli * 4 then
        rate = old + increase
      end
      rate = clamp(rate, min, max)
      window_at, used, ok, bad = t_now, 0, 0, 0
    end
    redis.call('HSET', k_settings, 'adaptive_rate', fmt(rate), 'adaptive_at', fmt(window_at),
      'adaptive_used', fmt(used), 'adaptive_ok', fmt(ok), 'adaptive_bad', fmt(bad))
    if rate ~= old and k_events then
      redis.call('LPUSH', k_events, cjson.encode({at_ms = math.floor(t_now / 1000), what = 'adaptive',
        field = 'adaptive_rate', old = jobs_per_s(old), new = jobs_per_s(rate), by = 'sluice'}))
      redis.call('LTRIM', k_events, 0, 99)
    end
    return rate
  end

  return {applied, stale, adaptive_step(adaptive, adaptive.at, KEYS[6], KEYS[7])}
end
return {applied, stale}
