-- rotabloom sweep, protocol 1: one step of removing every key left under
-- the name of a filter that no longer exists (the records of idempotent
-- batches, which otherwise live out their time to live; a reservation
-- set; anything an interrupted drop left).
-- KEYS[1]: metadata hash. ARGV: SCAN cursor, the filter's key pattern,
-- SCAN COUNT.
-- Returns {next cursor, keys removed}, or 'BACK' when the filter exists
-- (created again meanwhile): then every key under the name may be the new
-- filter's, and none is removed.
--
-- A block with a time to live is left alone: it belongs to a creation or
-- a restore in progress, which makes it permanent when it publishes the
-- filter, and which fails if it is gone; it expires on its own if that
-- never happens.
--
-- The SCAN runs here, not in the client, so that in a Redis Cluster it
-- walks the node that serves the filter's slot (KEYS[1] routes the call);
-- the check and the removal are one step, so a filter created again
-- between two steps loses nothing.
if redis.call('EXISTS', KEYS[1]) == 1 then return 'BACK' end
local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local removed = 0
for _, key in ipairs(r[2]) do
  local leased = string.find(key, '}:gen:', 1, true) and redis.call('PTTL', key) >= 0
  if not leased then removed = removed + redis.call('UNLINK', key) end
end
return {r[1], removed}
