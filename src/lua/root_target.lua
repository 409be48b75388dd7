-- rotabloom root target (docs/FORMAT.md §11.8): the compare-and-set that
-- records a whole-filter change in a ready root before any shard makes it.
-- KEYS[1]: the root. ARGV: format, uid, n, then n expected field/value
-- pairs ('' for a field that must be absent), then the pairs to set.
-- 'OK', 'STALE' (an expected value differs) or 'GONE' (not this ready root).
local root = KEYS[1]
if redis.call('TYPE', root)['ok'] ~= 'hash'
  or redis.call('HGET', root, 'format') ~= ARGV[1]
  or redis.call('HGET', root, 'uid') ~= ARGV[2]
  or redis.call('HGET', root, 'state') ~= 'ready' then
  return 'GONE'
end
local n = tonumber(ARGV[3])
for i = 0, n - 1 do
  local have = redis.call('HGET', root, ARGV[4 + 2 * i]) or ''
  if have ~= ARGV[5 + 2 * i] then
    return 'STALE'
  end
end
if #ARGV >= 4 + 2 * n then
  redis.call('HSET', root, unpack(ARGV, 4 + 2 * n))
end
return 'OK'
