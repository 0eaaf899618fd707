--[[ sluice: sliding window counter.

Contract (EVAL/EVALSHA, one key):
  KEYS[1]  HASH holding two windows' counts: window, cur, prev
  ARGV[1]  max: jobs admitted per window, integer 1..1000000000
  ARGV[2]  window_ms: the window length in milliseconds, 1..31622400000;
           max * window_ms must stay below 2^52
  ARGV[3]  optional: now, integer microseconds since the epoch
           (default: Redis TIME; expiry is set on this clock, so a time in
           the past makes the key expire at once)
  Reply    {allowed, remaining, wait_us}
           allowed = 1: admitted now (wait_us = 0); remaining = jobs still
             admitted now.
           allowed = 0: denied, nothing changed; wait_us = time until a job
             would be admitted.
  Errors   a bad argument gets an error reply naming it.

Estimate = prev * (window - elapsed) / window + cur, where elapsed is the
time into the current window in whole milliseconds and windows are aligned
to the epoch. A job is admitted while estimate + 1 <= max. Compared
exactly, in integers: prev * (window - elapsed) + (cur + 1) * window <=
max * window. Constant memory, a close approximation of the sliding log.

Numbers are written with %d, never tostring. The key expires when the
window after its own has ended.
]]

-- sluice:model begin (shared with the claim script: see tools/embed_lua.c)
-- Time until a denied job would pass: later in this window as the previous
-- window's weight falls, or in the next window once its own count weighs less.
local function sliding_window_counter_wait(cur, prev, max, window_ms, start_us, now)
  local window_us = window_ms * 1000
  if cur + 1 > max then
    local elapsed_needed = window_ms - math.floor((max - 1) * window_ms / cur)
    return start_us + window_us + elapsed_needed * 1000 - now
  end
  local elapsed_needed = window_ms - math.floor((max - cur - 1) * window_ms / prev)
  if elapsed_needed < window_ms then return start_us + elapsed_needed * 1000 - now end
  return start_us + window_us - now
end

-- Admission decision: pure, no Redis calls. state = {window, cur, prev}
-- (window nil when absent). Returns allowed, remaining, wait_us, new state.
local function sliding_window_counter_decide(state, max, window_ms, now)
  local window_us = window_ms * 1000
  local window = math.floor(now / window_us)
  local start_us = window * window_us
  local elapsed_ms = math.floor((now - start_us) / 1000)
  local cur, prev = 0, 0
  if state.window == window then
    cur, prev = state.cur, state.prev
  elseif state.window == window - 1 then
    prev = state.cur
  end
  local weighted_prev = prev * (window_ms - elapsed_ms)
  if weighted_prev + (cur + 1) * window_ms > max * window_ms then
    return 0, 0, sliding_window_counter_wait(cur, prev, max, window_ms, start_us, now), nil
  end
  cur = cur + 1
  local remaining = math.floor((max * window_ms - weighted_prev) / window_ms) - cur
  return 1, remaining, 0, {window = window, cur = cur, prev = prev}
end

local function sliding_window_counter_load(key)
  local stored = redis.call('HMGET', key, 'window', 'cur', 'prev')
  return {window = tonumber(stored[1]), cur = tonumber(stored[2]) or 0, prev = tonumber(stored[3]) or 0}
end

-- Writes both counts; they expire when the window after this one ends.
local function sliding_window_counter_store(key, state, max, window_ms)
  redis.call('HSET', key, 'window', string.format('%d', state.window),
    'cur', string.format('%d', state.cur), 'prev', string.format('%d', state.prev))
  redis.call('PEXPIREAT', key, string.format('%d', (state.window + 2) * window_ms))
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

local function sliding_window_counter_parse_args()
  if #KEYS ~= 1 then return nil, 'expects exactly 1 key (the counter HASH)' end
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
  if (a.max + 1) * a.window_ms > 4503599627370496 then
    return nil, string.format('max * window_ms must stay below 2^52 for exact arithmetic, got %d * %d', a.max, a.window_ms)
  end
  return a
end

local args, err = sliding_window_counter_parse_args()
if not args then return redis.error_reply('ERR sliding_window_counter: ' .. err) end

local state = sliding_window_counter_load(KEYS[1])
local allowed, remaining, wait_us, new_state =
  sliding_window_counter_decide(state, args.max, args.window_ms, args.now)
if new_state then sliding_window_counter_store(KEYS[1], new_state, args.max, args.window_ms) end
return {allowed, remaining, wait_us}
