--[[ sluice: reslot, new slots for jobs a daemon holds late (internal script).

Why: in a fleet, a member late after a stall catches up only in turns it
owns, and turns belong to the members that claim slots (src/job/pacing.h).
When the tenant's backlog ends nobody claims, and a late member would
have to catch up alone, beside the others doing the same: the merged
departures would crowd. So it asks the schedule for new slots for the
jobs it owes, as a claim would give them (after every slot given before,
1/rate apart), and departs them there: the fleet's merged departures stay
on the one schedule. The jobs passed their limits when they were claimed;
they are not judged again (no limit counts them twice), and they keep
their leases.

KEYS  1 shape (HASH)
ARGV  1 rate_milli (the rate the daemon holds: claim.lua's effective one)
      2 count (1..100000)  3 now_us (0: Redis TIME; tests pass one)
Reply {now_us, slot, slot, ...}: count slots, the first max(now, next_free)
      and the rest 1/rate apart on the exact schedule; next_free moves past
      the last. The shape hash is written as claim.lua writes it: it
      expires once next_free passes, unless claim.lua's checkpoints
      (`seen`) hold it.
]]

-- sluice:include shaping

local function fmt(n) return string.format('%d', n) end

-- Argument parsing: every failure names the argument (the same helper as
-- the other scripts'; tests/test_lua_helpers.c keeps the copies equal).
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

if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('ERR reslot: expects 1 key (shape) and ARGV rate_milli, count, now_us')
end
local rate_milli, err = parse_int(1, 'rate_milli', 1, 1000000000)
if err then return redis.error_reply('ERR reslot: ' .. err) end
local count
count, err = parse_int(2, 'count', 1, 100000)
if err then return redis.error_reply('ERR reslot: ' .. err) end
local now
now, err = parse_int(3, 'now_us', 0, 9007199254740991)
if err then return redis.error_reply('ERR reslot: ' .. err) end
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local stored = redis.call('HMGET', KEYS[1], 'next_free', 'frac', 'seen')
local next_free, frac = tonumber(stored[1]) or 0, tonumber(stored[2]) or 0
-- The jobs are in the bucket already: no capacity holds them back.
local CAPACITY = 9000000
local reply = {now}
for i = 1, count do
  local allowed, wait_us, free_after, frac_after = shaping_step(next_free, frac, CAPACITY, rate_milli, now)
  if allowed == 0 then
    return redis.error_reply(string.format('ERR reslot: the schedule runs %d us ahead; no room for more slots', wait_us))
  end
  reply[i + 1], next_free, frac = now + wait_us, free_after, frac_after
end
redis.call('HSET', KEYS[1], 'next_free', fmt(next_free), 'frac', fmt(frac))
if not stored[3] then redis.call('PEXPIREAT', KEYS[1], fmt(ceildiv(next_free, 1000))) end
return reply
