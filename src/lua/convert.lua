-- rotabloom convert, protocol 1: changes a filter's kind in place (a base
-- filter becomes generation 0 of an expanding filter), if the caller's view
-- is current. Every handle of the old kind then refuses the filter.
-- KEYS[1]: metadata hash; KEYS[2]: fence. ARGV: uid, epoch, expected kind, then field/value
-- pairs to set. Returns the new epoch, or 'STALE'.
local meta = KEYS[1]
local cur = redis.call('HMGET', meta, 'uid', 'epoch', 'kind')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] or cur[3] ~= ARGV[3] then return 'STALE' end
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
redis.call('HSET', meta, unpack(args))
local e = redis.call('HINCRBY', meta, 'epoch', 1)
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. e .. ':' .. (redis.call('HGET', meta, 'cleared') or '0'))
return e
