-- rotabloom clear, protocol 1: empties every generation, keeps the filter.
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3..]: every block key of
-- every generation. Clearing changes no structure (the epoch stays) but
-- counts in `cleared` and moves the fence, so guarded transactions and
-- client-side copies of frozen generations made before it are refused.
-- ARGV: uid, epoch, then the sequence numbers of all generations.
local meta = KEYS[1]
local cur = redis.call('HMGET', meta, 'uid', 'epoch')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then return 'STALE' end
for i = 3, #KEYS do redis.call('UNLINK', KEYS[i]) end
for i = 3, #ARGV do redis.call('HSET', meta, 'gen.' .. ARGV[i] .. '.count', '0') end
local c = redis.call('HINCRBY', meta, 'cleared', 1)
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. ARGV[2] .. ':' .. c)
return 'OK'
