-- rotabloom clear, protocol 1: the last step of a clear, after every block
-- was emptied (zero.lua, one block per call): resets the counts, counts the
-- clear in `cleared` and moves the fence, so guarded transactions and
-- client-side copies of frozen generations made before it are refused.
-- Clearing changes no structure (the epoch stays).
-- KEYS[1]: metadata hash; KEYS[2]: fence. ARGV: uid, epoch, cleared, new
-- cleared, then the listed generations' seqs. Returns 'OK' or 'STALE'.
local meta = KEYS[1]
if not current(meta, ARGV[1], ARGV[2], ARGV[3]) then return 'STALE' end
for i = 5, #ARGV do redis.call('HSET', meta, 'gen.' .. ARGV[i] .. '.count', '0') end
redis.call('HSET', meta, 'cleared', ARGV[4])
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[4])
return 'OK'
