-- rotabloom root claim (docs/FORMAT.md §11.4): writes a sharded filter's
-- whole root record with `state creating` unless its key exists;
-- `created_at` and `deadline` from the server's clock.
-- KEYS[1]: the root. ARGV: lease in ms, then field/value pairs.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local typ = redis.call('TYPE', KEYS[1])['ok']
if typ == 'hash' then
  return {'exists', tostring(now), redis.call('HGETALL', KEYS[1])}
elseif typ ~= 'none' then
  return {'wrongtype', typ}
end
redis.call('HSET', KEYS[1], 'created_at', tostring(now),
  'deadline', tostring(now + tonumber(ARGV[1])), unpack(ARGV, 2))
return {'claimed', tostring(now)}
