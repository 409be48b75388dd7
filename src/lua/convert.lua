-- rotabloom convert, protocol 1: changes a filter's kind in place (a base
-- filter becomes generation 0 of an expanding filter), if the caller's view
-- is current. Every handle of the old kind then refuses the filter.
-- KEYS[1]: metadata hash; KEYS[2]: fence. ARGV: uid, epoch, cleared,
-- expected kind, new epoch, then field/value pairs to set.
-- Returns 'OK' or 'STALE'.
local meta = KEYS[1]
if not current(meta, ARGV[1], ARGV[2], ARGV[3]) then return 'STALE' end
if redis.call('HGET', meta, 'kind') ~= ARGV[4] then return 'STALE' end
local args = {'epoch', ARGV[5]}
for i = 6, #ARGV do args[#args + 1] = ARGV[i] end
redis.call('HSET', meta, unpack(args))
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. ARGV[5] .. ':' .. ARGV[3])
return 'OK'
