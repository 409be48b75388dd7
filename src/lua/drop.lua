-- rotabloom drop, protocol 1: removes the filter and all its keys.
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3..]: every block key of
-- every generation, and of the next one if it was allocated ahead of need,
-- and the trash list (emptied before).
-- ARGV: uid, epoch, cleared. Returns 'OK', 'GONE' or 'STALE'.
local meta = KEYS[1]
if redis.call('EXISTS', meta) == 0 then return 'GONE' end
if not current(meta, ARGV[1], ARGV[2], ARGV[3]) then return 'STALE' end
for i = 3, #KEYS do redis.call('UNLINK', KEYS[i]) end
redis.call('UNLINK', meta, KEYS[2])
return 'OK'
