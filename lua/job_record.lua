--[[ sluice: the claimed-job record, one definition for claim.lua and
ack.lua (they splice in the model section below; this file is not a
script of its own).

A record is the value of sluice:{T}:jobs[id] while the job is claimed or
waits for a retry:
  "<attempts>:<first_seen_us>:<job as pushed>"
attempts in decimal, first_seen_us (when a claim first saw the job in
the queue, on Redis's clock: see claim.lua) in base 36: 10 characters instead of 16 decimal digits.
Every claimed job holds one record, so those 6 bytes are paid per job; for
a 45-byte job they bring the record into a smaller allocation (bench/,
memory). The job may hold any bytes, ':' and newlines included.
]]

-- sluice:model begin (shared with the claim and ack scripts: see tools/embed_lua.c)
local JOB_RECORD_DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz'

local function job_record_encode(attempts, first_seen_us, job)
  local digits, n = {}, first_seen_us
  repeat
    local d = n % 36
    table.insert(digits, 1, string.sub(JOB_RECORD_DIGITS, d + 1, d + 1))
    n = (n - d) / 36
  until n == 0
  return string.format('%d', attempts) .. ':' .. table.concat(digits) .. ':' .. job
end

-- attempts, first_seen_us, job; nil if `record` is not one.
local function job_record_decode(record)
  local attempts, first_seen, job = string.match(record, '^(%d+):(%w+):(.*)$')
  if not job then return nil end
  return tonumber(attempts), tonumber(first_seen, 36), job
end

-- Whether `record` is one (job_record_decode would read it), without
-- copying the job out of it.
local function job_record_valid(record)
  return string.find(record, '^%d+:%w+:') ~= nil
end
-- sluice:model end
