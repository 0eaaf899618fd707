--[[ sluice: shaping, the leaky bucket used as a queue (departure schedule).

Contract (EVAL/EVALSHA, one key):
  KEYS[1]  HASH holding the schedule: next_free, frac
  ARGV[1]  capacity: jobs the bucket may hold, integer 1..9000000
  ARGV[2]  rate: departures per second, 0.001..1000000, a multiple of 0.001
  ARGV[3]  optional: now, integer microseconds since the epoch
           (default: Redis TIME; expiry is set on this clock, so a time in
           the past makes the key expire at once)
  Reply    {allowed, remaining, wait_us}
           allowed = 1: the job's departure slot is now + wait_us;
             remaining = jobs that would still fit in the bucket now.
           allowed = 0: the bucket is full (overflow); nothing changed;
             wait_us = time until a job would be accepted.
  Errors   a bad argument gets an error reply naming it.

Departures are spaced exactly 1/rate apart: a job's slot is
max(now, next_free), then next_free advances by 1/rate. An idle tenant's
first job leaves at once. The bucket holds the jobs scheduled but not yet
departed; a job is accepted while level + 1 <= capacity.

Exactness: all arithmetic is on integers below 2^53 (exact in Lua's
doubles) and every number written to Redis is formatted with %d, never
tostring (14 digits, which rounds epoch microseconds). The rate is held as
R = milli-jobs per second, so one interval is 1e9/R us. The exact schedule
point is next_free - frac/R us with 0 <= frac < R: next_free is that point
rounded up to a whole microsecond. The key expires when next_free passes;
from then on a missing key and the stored one give the same answers.
]]

-- sluice:model begin (shared with the claim script: see tools/embed_lua.c)
local JOB = 1000000000 -- one job, in bucket units (nano-jobs); R units leak per us

local function ceildiv(a, b)
  return math.floor((a + b - 1) / b)
end

-- Admission decision on plain numbers: pure, no Redis calls, no table
-- (claim.lua runs it once per job). next_free, frac: the schedule (zeros
-- when absent). Returns allowed, wait_us, and when allowed the new
-- next_free and frac and the level before the job (see below).
local function shaping_step(next_free, frac, capacity, rate_milli, now)
  if frac >= rate_milli then frac = rate_milli - 1 end -- the rate changed
  if next_free <= now then next_free, frac = now, 0 end -- idle: restart at now
  -- Accept while level + 1 <= capacity, level = ((next_free - now) * R - frac) / JOB;
  -- compared as a backlog in us so nothing is multiplied past 2^53. (An
  -- integer exceeds x exactly when it exceeds floor(x): the floor is taken
  -- only for the wait.)
  local backlog_max = (capacity * JOB - JOB + frac) / rate_milli
  if next_free - now > backlog_max then
    return 0, next_free - now - math.floor(backlog_max)
  end
  local rest = JOB - frac
  local step = ceildiv(rest, rate_milli)
  return 1, next_free - now, next_free + step, step * rate_milli - rest,
    (next_free - now) * rate_milli - frac
end

-- shaping_step on a state table {next_free, frac}: returns allowed,
-- remaining (jobs that would still fit), wait_us, new state (nil when not
-- allowed).
local function shaping_decide(state, capacity, rate_milli, now)
  local allowed, wait_us, next_free, frac, level = shaping_step(state.next_free, state.frac,
    capacity, rate_milli, now)
  if allowed == 0 then return 0, 0, wait_us, nil end
  local remaining = math.floor((capacity * JOB - level - JOB) / JOB)
  return 1, remaining, wait_us, {next_free = next_free, frac = frac}
end

-- A 429/503 pause (ack.lua): no slot before until_us, so the schedule
-- restarts there, at an exact point (frac 0). Pure, no Redis calls.
-- Returns the new state, or nil when the schedule already runs past
-- until_us (nothing changes).
local function shaping_pause(state, until_us)
  if until_us > state.next_free then return {next_free = until_us, frac = 0} end
  return nil
end

local function shaping_load(key)
  local stored = redis.call('HMGET', key, 'next_free', 'frac')
  return {next_free = tonumber(stored[1]) or 0, frac = tonumber(stored[2]) or 0}
end

-- Writes the schedule; it expires once next_free has passed.
local function shaping_store(key, state)
  redis.call('HSET', key, 'next_free', string.format('%d', state.next_free),
    'frac', string.format('%d', state.frac))
  redis.call('PEXPIREAT', key, string.format('%d', ceildiv(state.next_free, 1000)))
end
-- sluice:model end

-- Argument parsing: every failure names the argument. A script must run
-- alone, so it carries its own copy of these helpers; tests/test_lua_helpers.c
-- keeps the copies equal.
local function parse_int(i, name, lo, hi)
  local s = ARGV[i]
  if s == nil then return nil, string.format('ARGV[%d] (%s) is missing', i, name) end
  if not string.match(s, '^%d+$') or #s > 16 then
    return nil, string.format("ARGV[%d] (%s) must be an integer, got '%s'", i, name, s:sub(1, 40))
  end
  local v = tonumber(s)
  if v < lo or v > hi then
    return nil, string.format('ARGV[%d] (%s) must be between %d and %d, got %s', i, name, lo, hi, s)
  end
  return v
end

local function parse_rate_milli(i, name)
  local s = ARGV[i]
  if s == nil then return nil, string.format('ARGV[%d] (%s) is missing', i, name) end
  local whole, frac = string.match(s, '^(%d+)%.(%d+)$')
  if not whole then whole, frac = string.match(s, '^(%d+)$'), '' end
  if not whole or #whole > 7 then
    return nil, string.format("ARGV[%d] (%s) must be a decimal number like 10 or 0.5, got '%s'", i, name, s:sub(1, 40))
  end
  if not string.match(frac:sub(4), '^0*$') then
    return nil, string.format('ARGV[%d] (%s) must be a multiple of 0.001, got %s', i, name, s)
  end
  local milli = tonumber(whole) * 1000 + tonumber((frac .. '000'):sub(1, 3))
  if milli < 1 or milli > 1000000000 then
    return nil, string.format('ARGV[%d] (%s) must be between 0.001 and 1000000, got %s', i, name, s)
  end
  return milli
end

local function shaping_parse_args()
  if #KEYS ~= 1 then return nil, 'expects exactly 1 key (the schedule HASH)' end
  if #ARGV < 2 or #ARGV > 3 then return nil, 'expects ARGV capacity, rate [, now_us]' end
  local a, err = {}, nil
  a.capacity, err = parse_int(1, 'capacity', 1, 9000000)
  if err then return nil, err end
  a.rate_milli, err = parse_rate_milli(2, 'rate')
  if err then return nil, err end
  if ARGV[3] then
    a.now, err = parse_int(3, 'now_us', 0, 9007199254740991)
    if err then return nil, err end
  else
    local t = redis.call('TIME')
    a.now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return a
end

local args, err = shaping_parse_args()
if not args then return redis.error_reply('ERR shaping: ' .. err) end

local state = shaping_load(KEYS[1])
local allowed, remaining, wait_us, new_state = shaping_decide(state, args.capacity, args.rate_milli, args.now)
if new_state then shaping_store(KEYS[1], new_state) end
return {allowed, remaining, wait_us}
