--[[ sluice: fixed window counter.

Contract (EVAL/EVALSHA, one key):
  KEYS[1]  HASH holding the current window: window, count
  ARGV[1]  max: jobs admitted per window, integer 1..1000000000
  ARGV[2]  window_ms: the window length in milliseconds, 1..31622400000
  ARGV[3]  optional: now, integer microseconds since the epoch
           (default: Redis TIME; expiry is set on this clock, so a time in
           the past makes the key expire at once)
  Reply    {allowed, remaining, wait_us}
           allowed = 1: admitted now (wait_us = 0); remaining = jobs still
             admitted in this window.
           allowed = 0: denied, nothing changed; wait_us = time until the
             next window opens.
  Errors   a bad argument gets an error reply naming it.

Windows are aligned to the epoch (window k covers [k*window, (k+1)*window)),
so every worker of a fleet agrees on them. Known trade-off, kept on
purpose: up to 2*max jobs can pass around a window boundary; use the
sliding window log or counter where that matters.

Numbers are written with %d, never tostring. The key expires when its
window ends.
]]


-- sluice:model begin (shared with the claim script: see tools/embed_lua.c)
-- Admission decision: pure, no Redis calls. state = {window, count}
-- (window nil when absent). Returns allowed, remaining, wait_us, new state.
local function fixed_window_decide(state, max, window_ms, now)
  local window_us = window_ms * 1000
  local window = math.floor(now / window_us)
  local count = 0
  if state.window == window then count = state.count end
  if count >= max then
    return 0, 0, (window + 1) * window_us - now, nil
  end
  count = count + 1
  return 1, max - count, 0, {window = window, count = count}
end

local function fixed_window_load(key)
  local stored = redis.call('HMGET', key, 'window', 'count')
  return {window = tonumber(stored[1]), count = tonumber(stored[2]) or 0}
end

-- Writes the count; it expires when its window ends.
local function fixed_window_store(key, state, max, window_ms)
  redis.call('HSET', key, 'window', string.format('%d', state.window),
    'count', string.format('%d', state.count))
  redis.call('PEXPIREAT', key, string.format('%d', (state.window + 1) * window_ms))
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

local function fixed_window_parse_args()
  if #KEYS ~= 1 then return nil, 'expects exactly 1 key (the window HASH)' end
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

local args, err = fixed_window_parse_args()
if not args then return redis.error_reply('ERR fixed_window: ' .. err) end

local state = fixed_window_load(KEYS[1])
local allowed, remaining, wait_us, new_state = fixed_window_decide(state, args.max, args.window_ms, args.now)
if new_state then fixed_window_store(KEYS[1], new_state, args.max, args.window_ms) end
return {allowed, remaining, wait_us}
