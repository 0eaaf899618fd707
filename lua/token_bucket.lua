--[[ sluice: token bucket.

Contract (EVAL/EVALSHA, one key):
  KEYS[1]  HASH holding the bucket: tokens, last
  ARGV[1]  capacity: tokens the bucket holds (the largest burst), integer 1..9000000
  ARGV[2]  rate: tokens added per second, 0.001..1000000, a multiple of 0.001
  ARGV[3]  optional: now, integer microseconds since the epoch
           (default: Redis TIME; expiry is set on this clock, so a time in
           the past makes the key expire at once)
  Reply    {allowed, remaining, wait_us}
           allowed = 1: admitted now (wait_us = 0); remaining = whole
             tokens left.
           allowed = 0: denied, nothing changed; wait_us = time until a
             token is there.
  Errors   a bad argument gets an error reply naming it.

A new bucket is full: a burst of exactly `capacity` jobs passes, then jobs
pass at `rate`. Each admitted job takes one token.

Exactness: tokens are kept in nano-tokens (one token = 1e9) and the rate as
R milli-tokens per second, so exactly R nano-tokens are added per
microsecond: integers below 2^53 throughout, no fraction is floored away,
and `last` moves only when a job is admitted. Numbers are written with %d,
never tostring. The key expires when the bucket is full again; from then
on a missing key gives the same answers.
]]

-- sluice:model begin (shared with the claim script: see tools/embed_lua.c)
local JOB = 1000000000 -- one token, in bucket units (nano-tokens); R units refill per us

local function ceildiv(a, b)
  return math.floor((a + b - 1) / b)
end

-- Admission decision: pure, no Redis calls. state = {tokens, last}, tokens
-- nil when absent (a full bucket). Returns allowed, remaining, wait_us, new state.
local function token_bucket_decide(state, capacity, rate_milli, now)
  local full = capacity * JOB
  local tokens, last = state.tokens, state.last
  if tokens == nil then tokens, last = full, now end
  if tokens > full then tokens = full end -- the capacity was lowered
  if now > last and tokens < full then
    local elapsed = now - last
    if elapsed >= ceildiv(full - tokens, rate_milli) then tokens = full else tokens = tokens + elapsed * rate_milli end
  end
  if tokens < JOB then
    return 0, 0, ceildiv(JOB - tokens, rate_milli), nil
  end
  tokens = tokens - JOB
  return 1, math.floor(tokens / JOB), 0, {tokens = tokens, last = math.max(now, last)}
end

local function token_bucket_load(key)
  local stored = redis.call('HMGET', key, 'tokens', 'last')
  return {tokens = tonumber(stored[1]), last = tonumber(stored[2]) or 0}
end

-- Writes the bucket; it expires once the bucket is full again.
local function token_bucket_store(key, state, capacity, rate_milli)
  redis.call('HSET', key, 'tokens', string.format('%d', state.tokens),
    'last', string.format('%d', state.last))
  local full_at = state.last + ceildiv(capacity * JOB - state.tokens, rate_milli)
  redis.call('PEXPIREAT', key, string.format('%d', ceildiv(full_at, 1000)))
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

local function token_bucket_parse_args()
  if #KEYS ~= 1 then return nil, 'expects exactly 1 key (the bucket HASH)' end
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

local args, err = token_bucket_parse_args()
if not args then return redis.error_reply('ERR token_bucket: ' .. err) end

local state = token_bucket_load(KEYS[1])
local allowed, remaining, wait_us, new_state = token_bucket_decide(state, args.capacity, args.rate_milli, args.now)
if new_state then token_bucket_store(KEYS[1], new_state, args.capacity, args.rate_milli) end
return {allowed, remaining, wait_us}
