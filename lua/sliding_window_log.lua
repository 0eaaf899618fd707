--[[ sluice: sliding window log.

Contract (EVAL/EVALSHA, one key):
  KEYS[1]  ZSET of admitted jobs: score = admission time in microseconds,
           member = "<time>:<n>" (n counts jobs of the same microsecond, so
           two jobs never collide)
  ARGV[1]  max: jobs admitted in any window, integer 1..1000000000
  ARGV[2]  window_ms: the window length in milliseconds, 1..31622400000
  ARGV[3]  optional: now, integer microseconds since the epoch
           (default: Redis TIME; expiry is set on this clock, so a time in
           the past makes the key expire at once)
  Reply    {allowed, remaining, wait_us}
           allowed = 1: admitted now (wait_us = 0); remaining = jobs still
             admitted now.
           allowed = 0: denied and not recorded; wait_us = time until the
             oldest entry that blocks leaves the window.
  Errors   a bad argument gets an error reply naming it.

The window is (now - window, now]: at most `max` jobs in any window of that
length, boundaries included. Exact, at O(max) memory. A denied job is not
added (it would otherwise keep the tenant blocked for ever under load).

Numbers are written with %d, never tostring. The key expires one window
after its newest entry.
]]

-- sluice:model begin (shared with the claim script: see tools/embed_lua.c)
local function ceildiv(a, b)
  return math.floor((a + b - 1) / b)
end

local function sliding_window_log_load(key)
  return {key = key}
end

-- The log's state is the ZSET itself, so deciding reads it (and trims the
-- entries that have left the window, which changes no answer).
local function sliding_window_log_decide(state, max, window_ms, now)
  local key, window_us = state.key, window_ms * 1000
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window_us))
  local count = redis.call('ZCARD', key)
  if count >= max then
    local blocking = redis.call('ZRANGE', key, count - max, count - max, 'WITHSCORES')
    return 0, 0, tonumber(blocking[2]) + window_us - now, nil
  end
  return 1, max - count - 1, 0, {key = key, now = now}
end

-- Records the admission; the key expires one window after its newest entry.
local function sliding_window_log_store(key, state, max, window_ms)
  local now = string.format('%d', state.now)
  local same_us = redis.call('ZCOUNT', key, now, now)
  redis.call('ZADD', key, now, now .. ':' .. string.format('%d', same_us))
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', key, string.format('%d', ceildiv(tonumber(newest[2]) + window_ms * 1000, 1000)))
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

local function sliding_window_log_parse_args()
  if #KEYS ~= 1 then return nil, 'expects exactly 1 key (the log ZSET)' end
  if #ARGV < 2 or #ARGV > 3 then return nil, 'expects ARGV max, window_ms [, now_us]' end
  local a, err = {}, nil
  a.max, err = parse_int(1, 'max', 1, 1000000000)
  if err then return nil, err end
  a.window_ms, err = parse_int(2, 'window_ms', 1, 31622400000)
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

local args, err = sliding_window_log_parse_args()
if not args then return redis.error_reply('ERR sliding_window_log: ' .. err) end

local state = sliding_window_log_load(KEYS[1])
local allowed, remaining, wait_us, new_state =
  sliding_window_log_decide(state, args.max, args.window_ms, args.now)
if new_state then sliding_window_log_store(KEYS[1], new_state, args.max, args.window_ms) end
return {allowed, remaining, wait_us}
