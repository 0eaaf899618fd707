--[[ sluice: claim, the daemon's one round trip per batch (internal script).

Claims the jobs of one tenant that depart within a short lookahead: gives
each its slot on the tenant's shaping schedule, checks the tenant's stacked
limits at that slot (all pass, then all commit), dead-letters what has
expired or overflowed, and leases the claimed jobs until they are acked.
The algorithms are not written again here: the build splices in the model
sections of lua/shaping.lua and the limit scripts (see tools/embed_lua.c).

KEYS  1 queue (LIST)  2 shape (HASH)  3 inflight (ZSET)  4 jobs (HASH)
      5 retry (ZSET)  6 dlq (LIST)    7.. one key per limit, in ARGV order,
      then the settings (HASH; optional: without it the file's values hold)
ARGV  1 capacity  2 rate_milli  3 overflow ("wait" | "dead-letter")
      4 max_wait_us (0: none)  5 lookahead_us  6 batch (most jobs to claim)
      7 lease_us (inflight deadline = slot + lease_us)  8 id_prefix (random,
      new for every call: a new job's id is it and the job's place in hex)
      9 tenant  10 format ("envelope" | "raw")  11 refill_us (see next_us)
      12 max_job_bytes (larger jobs are dead-lettered `too_large`)
      13 now_us (0: Redis TIME; tests pass one)
      14 limit count, then 5 per limit: name, type, first, second, on_deny
      (first, second as the limit's script takes them; rates in milli-jobs/s)
      after the limits (optional): concurrency, adaptive_min_milli,
      adaptive_max_milli (0: the tenant is not adaptive), all from the file
Reply {now_us, next_us, queue_len, reaped, dead_lettered,
       {reason, count, ...} (the dead letters by reason, in order of first use),
       rate_milli, rate_source, concurrency, paused_until_ms (the effective
       values, see Settings below),
       {place, id, attempts, first_seen_us, ...} (the claimed jobs that are
       not new: retries, reaped leases; place: among the jobs below, from 0,
       increasing),
       then 2 per claimed job: slot_us, job}
      A new job's id is id_prefix and its place in hex ("0", "1", ... "a"),
      its attempts 0; every job's lease is slot_us + lease_us. The reply
      does not repeat them: Redis converts every field of a reply, and at
      6 fields a job that was about 8% of its instructions per job
      (bench.callgrind_redis). A new job's first_seen_us is in its record.
      next_us: when to claim again (<= now: at once; 0: the tenant is idle),
      decided in one place: claim_again_at, at the end of this file.
      Past the lookahead, that is when the next slot is refill_us away:
      each claim then gathers lookahead - refill of jobs (claiming as soon
      as one slot came within reach took about one job per claim), and
      refill_us is the time a claim has to come back before the slot.
      A reply holds at most REPLY_MAX_BYTES of jobs (or one larger job):
      the rest waits for the next claim, at once.

Settings: the settings hash (SPEC section 9) is read once per claim (one
HMGET), so every daemon of a fleet obeys a change from its next claim.
The effective rate is the hash's `rate` if set, else its `adaptive_rate`
when the tenant is adaptive (clamped to the file's bounds), else the
file's (ARGV 2); the reply names which: "override", "adaptive" or "file".
`capacity` and `concurrency` override the file's likewise. While
`paused_until` (unix ms) lies ahead the claim takes nothing, reaps
nothing, and answers next_us = paused_until (the worker polls sooner, to
see a resume). A field that is not a positive integer is ignored: the
file's value holds. src/admission/settings.c is the C model.

Oversize jobs: a job over max_job_bytes is dead-lettered `too_large`,
whole, when it comes up; it never enters `jobs`, a reply or the worker.

max_wait_us counts from when a claim first saw the job in the queue (a
Redis list does not record when an element was pushed). Each claim notes
a checkpoint {n, t}: the n oldest jobs of the queue were there at its time
t. The checkpoints live in the shape hash's field `seen`, "n:t,n:t,..."
with n and t increasing and n counted from the head of the queue as the
claim leaves it. A job dequeued k-th from the head (k from 0) was first
seen at the t of the first checkpoint with n > k. A claim adds one only
when the queue holds jobs no checkpoint covers; at most SEEN_MAX are
kept, by dropping the one whose jobs lose least by taking the next one's
later time, so a job's first_seen can come out later than its push's
first sighting, never earlier: max_wait never expires a job early. (That
needs jobs to leave the queue only through this script: the counts do
not know a job removed by hand between two claims. Jobs dropped inside a
claim, by overflow, are accounted for.) While `seen` is non-empty the
shape hash does not expire.

Cost: Redis's work is paid per claim, not per job. The queue is read with
LRANGE in chunks from its head and trimmed once (LTRIM); the retry set is
read once (ZRANGE, again only if a claim uses more retries than one read
held); the shape hash (schedule and checkpoints) is read with one HMGET
and written with one HSET; the claimed jobs are written with one HSET and
one ZADD, the consumed retries removed with one ZREM, the dead letters
pushed with one LPUSH. A claim of WIDE_RECORDS_FROM jobs or more makes
the jobs hash a table before it writes (see write_batch): the listpack
Redis keeps a small hash in costs a search per field. Lua's work per job
is kept small too: the usual pass (claim_plain_run) takes no table and
few calls per job. A chunk is sized so that it may pull at most the
reply's byte bound, guessing each unread job as large as the largest read
so far (as max_job_bytes before any: 4 jobs at the default 1 MiB), and at
most twice the chunk before it, so a claim that stops early (a shaped
tenant's lookahead) reads little past its stop. Only jobs larger than every
earlier one can take a read past the bound. An oversize job (over
max_job_bytes) is copied into Lua once, by the read, to be dead-lettered
whole; never into `jobs` or the reply; and it counts against the byte
bound as every job judged does.

Records in `jobs`: see lua/job_record.lua. Expired
leases (a worker died) go to `retry`, due now: retries are claimed before
new jobs, and keep their id (Idempotency-Key), attempts and first-seen time.
]]

-- sluice:include shaping
-- sluice:include dead_letter
-- sluice:include job_record

-- The limit types, each the model of lua/NAME.lua spliced in below:
-- NAME_load, NAME_decide and NAME_store. Built only for a tenant with
-- limits: every function a script defines is a closure made anew on every
-- call, and these would cost a claim without limits about 22,000
-- instructions (bench.callgrind_redis).
local function limit_algorithms()
-- sluice:include policing
-- sluice:include token_bucket
-- sluice:include fixed_window
-- sluice:include sliding_window_log
-- sluice:include sliding_window_counter
  return {
    policing = {load = policing_load, decide = policing_decide, store = policing_store},
    token_bucket = {load = token_bucket_load, decide = token_bucket_decide, store = token_bucket_store},
    fixed_window = {load = fixed_window_load, decide = fixed_window_decide, store = fixed_window_store},
    -- A log's store appends the one admission of its state: it runs per job.
    -- The others overwrite their whole state, so the last one is stored once.
    sliding_window_log = {load = sliding_window_log_load, decide = sliding_window_log_decide,
      store = sliding_window_log_store, store_each = true},
    sliding_window_counter = {load = sliding_window_counter_load, decide = sliding_window_counter_decide,
      store = sliding_window_counter_store},
  }
end

local K_QUEUE, K_SHAPE, K_INFLIGHT, K_JOBS, K_RETRY, K_DLQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local capacity, rate_milli = tonumber(ARGV[1]), tonumber(ARGV[2])
local overflow_dead_letter = ARGV[3] == 'dead-letter'
local max_wait_us, lookahead_us = tonumber(ARGV[4]), tonumber(ARGV[5])
local batch, lease_us = tonumber(ARGV[6]), tonumber(ARGV[7])
local id_prefix, tenant, envelope = ARGV[8], ARGV[9], ARGV[10] == 'envelope'
local refill_us = math.min(tonumber(ARGV[11]), lookahead_us)
local max_job_bytes = tonumber(ARGV[12])
local REPLY_MAX_BYTES = 4 * 1024 * 1024 -- the jobs of one reply, unless one job is larger
local SEEN_MAX = 32 -- checkpoints kept in the shape hash's `seen`
local BATCH_ARGS = 4000 -- arguments per variadic call: even (pairs), far below Lua's unpack limit
local WIDE_RECORDS_FROM = 64 -- a claim of this many jobs makes `jobs` a table (write_batch)
local WIDE_FIELD = string.rep('~', 65) -- longer than a listpack field (no id has a '~')

local limit_count = tonumber(ARGV[14])
local limits = {}
local algorithms = limit_count > 0 and limit_algorithms() or {}
for i = 1, limit_count do
  local at = 14 + (i - 1) * 5
  local algorithm = algorithms[ARGV[at + 2]]
  if not algorithm then return redis.error_reply('ERR claim: unknown limit type ' .. tostring(ARGV[at + 2])) end
  limits[i] = {key = KEYS[6 + i], name = ARGV[at + 1], algorithm = algorithm,
    first = tonumber(ARGV[at + 3]), second = tonumber(ARGV[at + 4]), delay = ARGV[at + 5] ~= 'dead-letter'}
end
local K_SETTINGS = KEYS[7 + limit_count]
local settings_at = 15 + limit_count * 5
local concurrency = tonumber(ARGV[settings_at]) or 0
local adaptive_min, adaptive_max = tonumber(ARGV[settings_at + 1]) or 0, tonumber(ARGV[settings_at + 2]) or 0

local now = tonumber(ARGV[13])
if now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n) return string.format('%d', n) end

-- ---- The fleet's settings (see the header): one HMGET per claim ----

-- A settings field as a positive integer, or nil (absent or not one:
-- decimal digits only, at most 15 (exact in a Lua number), as
-- sl_settings_field reads it).
local function settings_positive(text)
  if not text or #text > 15 or not string.match(text, '^%d+$') then return nil end
  local n = tonumber(text)
  if n >= 1 then return n end
  return nil
end

local rate_source, paused_until = 'file', 0
if K_SETTINGS then
  local s = redis.call('HMGET', K_SETTINGS, 'rate', 'capacity', 'concurrency', 'paused_until', 'adaptive_rate')
  local rate, adaptive = settings_positive(s[1]), settings_positive(s[5])
  if rate then
    rate_milli, rate_source = rate, 'override'
  elseif adaptive and adaptive_max > 0 then
    rate_milli, rate_source = math.max(adaptive_min, math.min(adaptive, adaptive_max)), 'adaptive'
  end
  capacity = settings_positive(s[2]) or capacity
  concurrency = settings_positive(s[3]) or concurrency
  paused_until = settings_positive(s[4]) or 0
end
if paused_until * 1000 > now then -- paused: nothing is claimed, nothing changes
  return {now, paused_until * 1000, redis.call('LLEN', K_QUEUE), 0, 0, {}, rate_milli, rate_source,
    concurrency, paused_until, {}}
end

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

-- What the claim writes, gathered and written once at its end (write_batch).
local dlq_records = {}      -- LPUSH dlq, in order
local jobs_set = {}         -- HSET jobs: id, record, ...
local jobs_deleted = {}     -- HDEL jobs
local inflight_added = {}   -- ZADD inflight: lease, id, ...
local retry_removed = {}    -- ZREM retry

local dead_lettered, dead_reasons = 0, {}
local function dead_letter(job, reason, attempts, first_seen, message, id)
  dlq_records[#dlq_records + 1] = dead_letter_record(tenant, reason, job, id, nil, message, attempts,
    first_seen, now)
  dead_lettered = dead_lettered + 1
  for i = 1, #dead_reasons, 2 do
    if dead_reasons[i] == reason then dead_reasons[i + 1] = dead_reasons[i + 1] + 1 return end
  end
  dead_reasons[#dead_reasons + 1] = reason
  dead_reasons[#dead_reasons + 1] = 1
end

-- Leases past their deadline: the worker holding them is gone. Returns
-- how many were moved to `retry`, due now.
local function reap_expired_leases()
  local expired = redis.call('ZRANGEBYSCORE', K_INFLIGHT, '-inf', fmt(now), 'LIMIT', 0, 1000)
  if #expired == 0 then return 0 end
  local due = {}
  for i, id in ipairs(expired) do due[2 * i - 1], due[2 * i] = fmt(now), id end
  redis_batch('ZREM', K_INFLIGHT, expired)
  redis_batch('ZADD', K_RETRY, due)
  return #expired
end

-- The classic leaky bucket: what the bucket holds beyond capacity (queued,
-- retrying, claimed but not departed) is dropped, newest first. Only queued
-- jobs can go: retries and claimed jobs stay, so the excess dropped is at
-- most the queue. Returns the queue's length after.
local function drop_overflow(queue_len)
  local level = queue_len + redis.call('ZCARD', K_RETRY)
    + redis.call('ZCOUNT', K_INFLIGHT, '(' .. fmt(now + lease_us), '+inf')
  local excess = math.min(level - capacity, queue_len, 1000)
  if excess <= 0 then return queue_len end
  for _, job in ipairs(redis.call('LPOP', K_QUEUE, excess)) do
    dead_letter(job, 'overflow', 0, now, 'bucket over capacity ' .. capacity)
  end
  return queue_len - excess
end

-- ---- When queued jobs were first seen (max_wait_us; see the header) ----

-- The shape hash in one read: the schedule, as shaping_load reads it
-- ({next_free, frac}, zeros when absent), the checkpoints as stored (a
-- list of {n, t}) and the field `seen`'s text (false when absent).
local function shape_load()
  local stored = redis.call('HMGET', K_SHAPE, 'next_free', 'frac', 'seen')
  local schedule = {next_free = tonumber(stored[1]) or 0, frac = tonumber(stored[2]) or 0}
  local text, checkpoints = stored[3], {}
  for n, at in string.gmatch(text or '', '(%d+):(%d+)') do
    checkpoints[#checkpoints + 1] = {n = tonumber(n), t = tonumber(at)}
  end
  return schedule, checkpoints, text
end

-- The checkpoints once this claim, at now, saw queue_len jobs queued. None
-- may count past the queue: jobs dropped from its newest end (overflow, or
-- by hand) must not lend their time to later pushes.
local function seen_note(checkpoints, queue_len)
  local kept = {}
  for _, c in ipairs(checkpoints) do
    local n = math.min(c.n, queue_len)
    if n > 0 and (#kept == 0 or n > kept[#kept].n) then kept[#kept + 1] = {n = n, t = c.t} end
  end
  if queue_len > 0 and (#kept == 0 or queue_len > kept[#kept].n) then
    kept[#kept + 1] = {n = queue_len, t = now}
  end
  while #kept > SEEN_MAX do
    local drop, gap = 1, nil -- the jobs of checkpoint `drop` get the next one's time
    for i = 1, #kept - 1 do
      if not gap or kept[i + 1].t - kept[i].t < gap then drop, gap = i, kept[i + 1].t - kept[i].t end
    end
    table.remove(kept, drop)
  end
  return kept
end

-- When the job dequeued k-th from the head (k from 0) was first seen, and
-- up to which k (excluded) that answer holds. A claim asks in increasing
-- k, so the search goes on from its last answer.
local seen_next = 1 -- the first checkpoint that may have n > k
local function seen_at(checkpoints, k)
  local c = checkpoints[seen_next]
  while c and c.n <= k do
    seen_next = seen_next + 1
    c = checkpoints[seen_next]
  end
  if c then return c.t, c.n end
  return now, math.huge -- not reached: this claim's checkpoint covers the whole queue
end

-- Writes the shape hash once `taken` jobs left the head of the queue: the
-- schedule when it changed (as shaping_store writes it) and the
-- checkpoints left, in one HSET, and only what changed. While any
-- checkpoint is left the hash must not expire, so an expiry that may be
-- there goes (PERSIST): one set when `seen` was not, or one a pause in
-- ack.lua set (shaping_store) on a schedule this claim moved on. (If no
-- claim moves the schedule before that expiry, the checkpoints are lost
-- and the queue is seen afresh, later.) With none left the hash expires
-- as the schedule (next_free) would.
local function shape_store(schedule, schedule_changed, checkpoints, taken, stored_text)
  local left = {}
  for _, c in ipairs(checkpoints) do
    if c.n > taken then left[#left + 1] = fmt(c.n - taken) .. ':' .. fmt(c.t) end
  end
  local text = table.concat(left, ',')
  local fields = {}
  if schedule_changed then
    fields = {'next_free', fmt(schedule.next_free), 'frac', fmt(schedule.frac)}
  end
  if #left > 0 and text ~= stored_text then
    fields[#fields + 1] = 'seen'
    fields[#fields + 1] = text
  end
  if #fields > 0 then redis.call('HSET', K_SHAPE, unpack(fields)) end
  if #left > 0 then
    if schedule_changed or not stored_text then redis.call('PERSIST', K_SHAPE) end
    return
  end
  if stored_text then redis.call('HDEL', K_SHAPE, 'seen') end
  if stored_text or schedule_changed then
    redis.call('PEXPIREAT', K_SHAPE, fmt(ceildiv(schedule.next_free, 1000)))
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

local reaped = reap_expired_leases()
local queue_len = redis.call('LLEN', K_QUEUE)
if overflow_dead_letter then queue_len = drop_overflow(queue_len) end
local shape, seen_stored, seen_text = shape_load()
local seen = seen_note(seen_stored, queue_len)
local queue_taken = 0 -- jobs dequeued from the head by this claim

local shape_changed = false
local schedule_capacity = overflow_dead_letter and capacity or 9000000
for _, limit in ipairs(limits) do limit.state = limit.algorithm.load(limit.key) end
-- The reply: its header, written last, then 2 fields per claimed job; the
-- jobs that are not new are told in reply_retried (see the header).
local REPLY_HEADER = 11
local reply_retried = {}
local reply = {0, 0, 0, 0, 0, 0, rate_milli, rate_source, concurrency, 0, reply_retried}
local claimed = 0 -- jobs in the reply
local horizon = now + lookahead_us
local bytes = 0 -- of the candidates judged: the reply's byte bound counts them

-- ---- Reading ahead: the queue's head and the retry set, in chunks ----

local largest_read = 0 -- the largest job or record read so far
local read_size = 0 -- jobs or records in the last chunk read

-- How many jobs the next read may take: `wanted` at most, twice the last
-- read at most (a claim that stops early has read little past its stop),
-- and what the bytes left before the reply's bound hold if each unread job
-- is as large as the largest read (max_job_bytes before any): see the header.
local function chunk_size(wanted)
  local guess = largest_read > 0 and largest_read or max_job_bytes
  local fit = math.floor((REPLY_MAX_BYTES - bytes) / math.max(guess, 1))
  read_size = math.max(1, math.min(wanted, fit, read_size > 0 and 2 * read_size or wanted))
  return read_size
end

-- The queue from its head: queue_read[k + 1] is the job dequeued k-th (k
-- from 0); read_count of them are read, queue_taken dequeued. Nothing is
-- trimmed before write_batch, so indexes from the head hold still.
-- queue_dated[k + 1] is true when that job may carry a deadline: it came
-- in a chunk whose bytes mention one (one search per chunk, not per job;
-- job_deadline_us then looks at each of its jobs).
local queue_read, read_count, queue_dated = {}, 0, {}

-- The job at the head of the queue (reading a chunk if needed), or nil.
local function queue_head()
  if queue_taken == read_count then
    if read_count >= queue_len then return nil end
    local n = chunk_size(math.max(batch - claimed, 1))
    local chunk = redis.call('LRANGE', K_QUEUE, -(read_count + n), -(read_count + 1))
    local dated = envelope and string.find(table.concat(chunk), '"deadline"', 1, true) ~= nil
    for i = #chunk, 1, -1 do -- the list's right end is its head
      local job = chunk[i]
      read_count = read_count + 1
      queue_read[read_count] = job
      if dated then queue_dated[read_count] = true end
      if #job > largest_read then largest_read = #job end
    end
    if #chunk == 0 then return nil end
  end
  return queue_read[queue_taken + 1]
end

-- The retry set by rank: retries[i] = {id, due}. Consumed ones stay in the
-- set until write_batch, so ranks hold still. records[id] is a due retry's
-- record, read ahead (false: none).
local retries, retry_next, retries_all = {}, 1, false
local records = {}

-- The first retry not consumed, {id, due}, or nil: the set holds no more.
local function retry_head()
  if retry_next > #retries and not retries_all then
    local n = math.max(batch - claimed, 1) + 1 -- and the first that will wait, for next_us
    local ranked = redis.call('ZRANGE', K_RETRY, #retries, #retries + n - 1, 'WITHSCORES')
    for i = 1, #ranked, 2 do retries[#retries + 1] = {id = ranked[i], due = tonumber(ranked[i + 1])} end
    retries_all = #ranked < 2 * n
  end
  return retries[retry_next]
end

-- The record of the due retry at retry_next, reading the records of the
-- next due retries with it (one HMGET), as many as chunk_size allows.
local function retry_record(retry)
  if records[retry.id] == nil then
    local ids, n = {}, chunk_size(math.max(batch - claimed, 1))
    for i = retry_next, #retries do
      if #ids >= n or retries[i].due > horizon then break end
      if records[retries[i].id] == nil then ids[#ids + 1] = retries[i].id end
    end
    local got = redis_batch('HMGET', K_JOBS, ids)
    for i, id in ipairs(ids) do
      records[id] = got[i]
      if got[i] then largest_read = math.max(largest_read, #got[i]) end
    end
  end
  return records[retry.id] or nil
end

-- ---- One candidate's trip: next candidate, judge at the slot, commit or reject ----
--
-- The candidate in hand lives in these locals, not in a table per job:
-- its job, id (nil for a new job), attempts, first_seen and due time.
-- A pass that cannot go on returns a stop, {reason, at}, and the claim
-- ends there; claim_again_at, below, turns it into next_us.
-- c_dated: the job may carry a deadline (see queue_dated).
local c_job, c_id, c_attempts, c_first_seen, c_due, c_dated

-- Takes a due retry as the candidate: true, or false when it is dropped:
-- its record is gone (acked elsewhere) or this version cannot read it
-- (dead-lettered whole).
local function retry_candidate(retry)
  local id = retry.id
  local record = retry_record(retry)
  if not record then -- nothing to deliver
    retry_removed[#retry_removed + 1] = id
    retry_next = retry_next + 1
    return false
  end
  local attempts, first_seen, job = job_record_decode(record)
  if not job then -- not written by this version's scripts: kept whole, not delivered
    retry_removed[#retry_removed + 1] = id
    retry_next = retry_next + 1
    jobs_deleted[#jobs_deleted + 1] = id
    dead_letter(record, 'bad_record', 0, now, 'claim record is not "attempts:first_seen:job"', id)
    return false
  end
  c_job, c_id, c_attempts, c_first_seen, c_due, c_dated = job, id, attempts, first_seen, retry.due, true
  return true
end

-- Takes the next candidate: a retry due within the lookahead first
-- (retries are claimed before new jobs), else the head of the queue.
-- Returns true; false when a retry was dropped (look again); or false and
-- the stop 'drained' when there is none, at the first retry's due time.
local function next_candidate()
  local retry = retry_head()
  local retry_due = retry and retry.due
  if retry_due and retry_due <= horizon then return retry_candidate(retry) end
  local job = queue_head()
  if not job then return false, {reason = 'drained', at = retry_due} end
  c_job, c_id, c_attempts, c_first_seen, c_due = job, nil, 0, (seen_at(seen, queue_taken)), now
  c_dated = queue_dated[queue_taken + 1]
  return true
end

-- What judge found for a candidate it would claim, for commit: the
-- schedule and each limit's state after the job (pending_states[i] for
-- limits[i], overwritten by every judge).
local pending_next_free, pending_frac = 0, 0
local pending_states = {}

-- Every limit must pass at the slot; none commits unless all do. Fills
-- pending_states with the limits' states were the job claimed; returns
-- the name of the first denying limit that dead-letters (nil: none), and
-- when every denying limit that delays would pass (nil: none denied).
local function judge_limits(slot)
  local denied_by, delay_until = nil, nil
  for i, limit in ipairs(limits) do
    local ok, _, wait, new_state = limit.algorithm.decide(limit.state, limit.first, limit.second, slot)
    pending_states[i] = new_state
    if ok == 0 then
      if limit.delay then
        delay_until = math.max(delay_until or 0, slot + wait)
      else
        denied_by = denied_by or limit.name
      end
    end
  end
  return denied_by, delay_until
end

-- The candidate judged at its slot on the schedule. Returns its verdict,
-- 'claim' | 'too_large' | 'expired' | 'limit', with its slot (an oversize
-- job is judged before the schedule: it has no slot) and for 'limit' the
-- denying limit's name; or nil and a stop: 'full' (the schedule is at
-- capacity, until a job fits), 'beyond' (the slot is past the lookahead)
-- or 'held' (a delaying limit denied: the queue waits, in order, until it
-- would pass).
local function judge()
  if #c_job > max_job_bytes then return 'too_large' end
  local arrival = c_due > now and c_due or now
  local allowed, wait_us, next_free, frac = shaping_step(shape.next_free, shape.frac,
    schedule_capacity, rate_milli, arrival)
  if allowed == 0 then return nil, {reason = 'full', at = now + wait_us} end
  local slot = arrival + wait_us
  if slot > horizon then return nil, {reason = 'beyond', at = slot} end

  local deadline = c_dated and job_deadline_us(c_job)
  if (deadline and slot > deadline) or (max_wait_us > 0 and slot - c_first_seen > max_wait_us) then
    return 'expired', slot
  end
  if limit_count > 0 then
    local denied_by, delay_until = judge_limits(slot)
    if denied_by then return 'limit', slot, denied_by end
    if delay_until then return nil, {reason = 'held', at = delay_until} end
  end
  pending_next_free, pending_frac = next_free, frac
  return 'claim', slot
end

-- Takes the judged candidate off the retry set or the queue (written
-- by write_batch: ZREM, LTRIM).
local function dequeue()
  if c_id then
    retry_removed[#retry_removed + 1] = c_id
    retry_next = retry_next + 1
  else
    queue_read[queue_taken + 1] = nil
    queue_taken = queue_taken + 1
  end
end

-- The record of a new job before the job's bytes, by first_seen: the
-- jobs of one claim share a few first_seen times, so each is encoded once.
local record_heads = {}
local jobs_set_n, inflight_n = 0, 0 -- #jobs_set, #inflight_added

-- Claims the candidate at its slot: the schedule and every limit advance,
-- a new job gets its id and record, and the job is leased until slot + lease_us.
local function commit(slot)
  shape.next_free, shape.frac, shape_changed = pending_next_free, pending_frac, true
  for i = 1, limit_count do
    local limit = limits[i]
    limit.state = pending_states[i]
    if limit.algorithm.store_each then
      limit.algorithm.store(limit.key, limit.state, limit.first, limit.second)
    else
      limit.changed = true
    end
  end
  local id = c_id
  if id then -- not new: the reply tells its id, attempts and first_seen
    local r = #reply_retried
    reply_retried[r + 1], reply_retried[r + 2] = claimed, id
    reply_retried[r + 3], reply_retried[r + 4] = c_attempts, c_first_seen
  else -- a new job: attempts 0, and an id its place in the reply tells
    id = id_prefix .. string.format('%x', claimed)
    local head = record_heads[c_first_seen]
    if not head then
      head = job_record_encode(0, c_first_seen, '')
      record_heads[c_first_seen] = head
    end
    jobs_set[jobs_set_n + 1], jobs_set[jobs_set_n + 2] = id, head .. c_job
    jobs_set_n = jobs_set_n + 2
  end
  inflight_added[inflight_n + 1], inflight_added[inflight_n + 2] = fmt(slot + lease_us), id
  inflight_n = inflight_n + 2
  local at = REPLY_HEADER + 2 * claimed
  reply[at + 1], reply[at + 2] = slot, c_job
  claimed = claimed + 1
end

-- Dead-letters the candidate: over max_job_bytes, expired before its
-- slot, or denied by a limit that dead-letters. It consumes no slot and no limit.
local function reject(kind, denied_by)
  if c_id then jobs_deleted[#jobs_deleted + 1] = c_id end
  if kind == 'too_large' then
    dead_letter(c_job, 'too_large', c_attempts, c_first_seen,
      string.format('job: %d bytes, over the limit of %d', #c_job, max_job_bytes), c_id)
  elseif kind == 'expired' then
    dead_letter(c_job, 'expired', c_attempts, c_first_seen, 'deadline passed before the departure slot', c_id)
  else
    dead_letter(c_job, 'limit:' .. denied_by, c_attempts, c_first_seen, 'denied by limit ' .. denied_by, c_id)
  end
end

-- Whether no retry is due within the lookahead any more in this claim:
-- the retry set, read by rank (due order), holds none before the horizon.
local function no_retry_in_reach()
  local retry = retries[retry_next]
  if retry then return retry.due > horizon end
  return retries_all
end

-- The usual pass, written out: new jobs from the head of the queue while
-- no retry is in reach and the tenant has no limits. It is claim_batch's
-- loop with next_candidate, judge and dequeue written out for a job
-- that is plain: due now, no deadline mentioned in its chunk (see
-- queue_dated), no larger than max_job_bytes, and fitting the reply's
-- byte bound. It takes no table and few calls per job, and returns at
-- the first job it cannot claim so plainly (or any stop): claim_batch
-- then judges that one as any other.
--
-- The schedule: when one interval (1/rate) is a whole number of us and
-- the schedule holds no fraction, shaping_step comes down to this: the
-- slot is max(now, next_free), next_free advances by the interval, frac
-- stays 0, and the bucket is full past (capacity - 1) intervals of
-- backlog. Other rates take shaping_step itself.
local whole_interval = JOB % rate_milli == 0 and JOB / rate_milli or nil
local function claim_plain_run()
  local first_seen, seen_until = now, -1 -- seen_at's answer, and up to which job it holds
  while claimed < batch and bytes < REPLY_MAX_BYTES do
    local k = queue_taken + 1
    if k > read_count and not queue_head() then return end
    local job = queue_read[k]
    local size = #job
    if queue_dated[k] or size > max_job_bytes or (bytes > 0 and bytes + size > REPLY_MAX_BYTES) then return end
    local allowed, wait_us, next_free, frac
    if whole_interval and shape.frac == 0 then
      next_free = shape.next_free > now and shape.next_free or now
      allowed, wait_us = 1, next_free - now
      if wait_us > (schedule_capacity - 1) * whole_interval then allowed = 0 end
      next_free, frac = next_free + whole_interval, 0
    else
      allowed, wait_us, next_free, frac = shaping_step(shape.next_free, shape.frac,
        schedule_capacity, rate_milli, now)
    end
    local slot = now + wait_us
    if allowed == 0 or slot > horizon then return end
    if queue_taken >= seen_until then first_seen, seen_until = seen_at(seen, queue_taken) end
    if max_wait_us > 0 and slot - first_seen > max_wait_us then return end
    c_job, c_id, c_attempts, c_first_seen = job, nil, 0, first_seen
    pending_next_free, pending_frac = next_free, frac
    bytes = bytes + size
    queue_read[k] = nil
    queue_taken = k
    commit(slot)
  end
end

-- Claims up to `batch` jobs, in order, and up to REPLY_MAX_BYTES of them
-- (what the claim read, dead letters included, so an oversize job ends it
-- too); returns the stop that ended the claim.
local function claim_batch()
  if batch < 1 then return {reason = 'drained'} end -- nothing asked for: the reply says idle
  for _ = 1, batch * 4 do -- bounded: dead letters do not count against the batch
    if claimed >= batch then return {reason = 'batch'} end
    if bytes >= REPLY_MAX_BYTES then return {reason = 'bytes'} end
    if limit_count == 0 and no_retry_in_reach() then
      claim_plain_run()
      if claimed >= batch then return {reason = 'batch'} end
      if bytes >= REPLY_MAX_BYTES then return {reason = 'bytes'} end
    end
    local got, drained = next_candidate()
    if drained then return drained end
    if got then
      local kind, slot, denied_by = judge()
      if not kind then return slot end -- a stop
      -- A job that would take the reply past the bound waits, unless it is the first.
      if kind ~= 'too_large' and bytes > 0 and bytes + #c_job > REPLY_MAX_BYTES then
        return {reason = 'bytes'}
      end
      bytes = bytes + #c_job
      dequeue()
      if kind == 'claim' then commit(slot) else reject(kind, denied_by) end
    end
  end
  return {reason = 'bound'}
end

-- When to claim again (next_us in the reply), decided here only, from the
-- stop that ended the claim:
--   batch    the batch is full: more may be ready, at once
--   bound    the loop bound was reached (dead letters): likewise
--   bytes    the reply holds REPLY_MAX_BYTES of jobs: likewise
--   drained  the queue is empty: when the first retry comes within the
--            lookahead, or 0 (idle) when none waits
--   full     the schedule is at capacity: when a job fits again
--   beyond   the next slot is past the lookahead: refill_us before it (see
--            the header)
--   held     a delaying limit holds the queue: when it would pass
local function claim_again_at(stop)
  if stop.reason == 'drained' then return stop.at and stop.at - lookahead_us or 0 end
  if stop.reason == 'beyond' then return stop.at - refill_us end
  if stop.reason == 'full' or stop.reason == 'held' then return stop.at end
  return now
end

local next_us = claim_again_at(claim_batch())

-- write_batch: what the claim gathered, one variadic call per key and
-- kind. (A block, not a function: a function would be one more closure
-- made on every call.)
if queue_taken > 0 then redis.call('LTRIM', K_QUEUE, 0, -(queue_taken + 1)) end
redis_batch('ZREM', K_RETRY, retry_removed)
redis_batch('HDEL', K_JOBS, jobs_deleted)
-- A small hash is a listpack, which Redis searches end to end for every
-- field it sets or deletes, until its 129th field makes it a table: with
-- 100 tenants claiming about 500 jobs into an empty `jobs`, that was about
-- 18% of Redis's CPU. One field longer than a listpack may hold makes
-- Redis convert the hash before it sets any (hash-max-listpack-value, 64
-- by default). It is set with the first record alone and deleted before
-- the rest, so the table never holds one field more than the jobs (one
-- more would grow it a size early: 1,024 jobs in a table of 2,048).
-- Smaller claims leave the hash as Redis makes it: their scans are short
-- and their hash compact.
if jobs_set_n >= 2 * WIDE_RECORDS_FROM then
  redis.call('HSET', K_JOBS, WIDE_FIELD, '', jobs_set[1], jobs_set[2])
  redis.call('HDEL', K_JOBS, WIDE_FIELD)
  jobs_set[1], jobs_set[2] = jobs_set[jobs_set_n - 1], jobs_set[jobs_set_n] -- the last pair first
  jobs_set[jobs_set_n - 1], jobs_set[jobs_set_n] = nil, nil
end
redis_batch('HSET', K_JOBS, jobs_set)
redis_batch('ZADD', K_INFLIGHT, inflight_added)
redis_batch('LPUSH', K_DLQ, dlq_records)
for _, limit in ipairs(limits) do
  if limit.changed then limit.algorithm.store(limit.key, limit.state, limit.first, limit.second) end
end
shape_store(shape, shape_changed, seen, queue_taken, seen_text)

reply[1], reply[2], reply[3] = now, next_us, queue_len - queue_taken
reply[4], reply[5], reply[6] = reaped, dead_lettered, dead_reasons
return reply
