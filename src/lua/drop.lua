-- rotabloom drop, protocol 1: removes the filter and all its keys.
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3..]: every block key of
-- every generation, and of the next one if it was allocated ahead of need.
-- ARGV: uid, epoch.
local meta = KEYS[1]
local cur = redis.call('HMGET', meta, 'uid', 'epoch')
if not cur[1] then return 'GONE' end
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then return 'STALE' end
for i = 3, #KEYS do redis.call('UNLINK', KEYS[i]) end
redis.call('UNLINK', meta, KEYS[2])
return 'OK'
