--[[ sluice: the dead-letter record, one definition for claim.lua and
ack.lua (they splice in the model section below; this file is not a
script of its own).

A record is JSON, newest at the left of sluice:{T}:dlq:
  tenant, reason, job (the element as pushed), id (or null before one was
  given), http_status (or null), error, attempts (HTTP attempts made),
  first_seen_ms, dead_at_ms. Times are milliseconds: cjson writes numbers
  with 14 digits, exact for epoch milliseconds, not for microseconds.
]]

-- sluice:model begin (shared with the claim and ack scripts: see tools/embed_lua.c)
local function dead_letter_record(tenant, reason, job, id, http_status, err, attempts,
                                  first_seen_us, now_us)
  return cjson.encode({
    tenant = tenant, reason = reason, job = job, id = id or cjson.null,
    http_status = (http_status and http_status > 0) and http_status or cjson.null,
    error = err, attempts = attempts,
    first_seen_ms = math.floor(first_seen_us / 1000), dead_at_ms = math.floor(now_us / 1000)})
end
-- sluice:model end
