--[[ sluice: policing, the leaky bucket used as a meter.

Contract (EVAL/EVALSHA, one key):
  KEYS[1]  HASH holding the meter: level, last
  ARGV[1]  capacity: jobs the bucket may hold, integer 1..9000000
  ARGV[2]  rate: jobs per second leaking out, 0.001..1000000, a multiple of 0.001
  ARGV[3]  optional: now, integer microseconds since the epoch
           (default: Redis TIME; expiry is set on this clock, so a time in
           the past makes the key expire at once)
  Reply    {allowed, remaining, wait_us}
           allowed = 1: admitted now (wait_us = 0); remaining = jobs that
             would still be admitted now.
           allowed = 0: denied, nothing changed; wait_us = time until a job
             would be admitted.
  Errors   a bad argument gets an error reply naming it.

Each admitted job pours one unit into the bucket, which leaks at `rate`;
a job is admitted while level + 1 <= capacity. Unlike shaping, a denied job
is not scheduled: the caller decides what to do with it.

Exactness: the level is kept in nano-jobs (one job = 1e9) and the rate as
R milli-jobs per second, so exactly R nano-jobs leak per microsecond:
integers below 2^53 throughout, no fraction is ever floored away, and
numbers are written with %d, never tostring. The key expires when the
bucket has drained; from then on a missing key gives the same answers.
]]

-- sluice:model begin (shared with the claim script: see tools/embed_lua.c)
local JOB = 1000000000 -- one job, in bucket units (nano-jobs); R units leak per us

local function ceildiv(a, b)
  return math.floor((a + b - 1) / b)
end

-- Admission decision: pure, no Redis calls. state = {level, last} (zeros
-- when absent). Returns allowed, remaining, wait_us, new state.
local function policing_decide(state, capacity, rate_milli, now)
  local level, last = state.level, state.last
  if now > last and level > 0 then
    local elapsed = now - last
    if elapsed >= ceildiv(level, rate_milli) then level = 0 else level = level - elapsed * rate_milli end
  end
  if level + JOB > capacity * JOB then
    return 0, 0, ceildiv(level + JOB - capacity * JOB, rate_milli), nil
  end
  level = level + JOB
  return 1, math.floor((capacity * JOB - level) / JOB), 0, {level = level, last = math.max(now, last)}
end

local function policing_load(key)
  local stored = redis.call('HMGET', key, 'level', 'last')
  return {level = tonumber(stored[1]) or 0, last = tonumber(stored[2]) or 0}
end

-- Writes the meter; it expires once the bucket has drained.
local function policing_store(key, state, capacity, rate_milli)
  redis.call('HSET', key, 'level', string.format('%d', state.level),
    'last', string.format('%d', state.last))
  local drained_at = state.last + ceildiv(state.level, rate_milli)
  redis.call('PEXPIREAT', key, string.format('%d', ceildiv(drained_at, 1000)))
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

local function policing_parse_args()
  if #KEYS ~= 1 then return nil, 'expects exactly 1 key (the meter HASH)' end
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

local args, err = policing_parse_args()
if not args then return redis.error_reply('ERR policing: ' .. err) end

local state = policing_load(KEYS[1])
local allowed, remaining, wait_us, new_state = policing_decide(state, args.capacity, args.rate_milli, args.now)
if new_state then policing_store(KEYS[1], new_state, args.capacity, args.rate_milli) end
return {allowed, remaining, wait_us}
