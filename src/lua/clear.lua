-- rotabloom clear, protocol 1: empties every generation, keeps the filter.
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3..]: every block key of
-- every generation. Clearing changes no structure (the epoch stays) but
-- counts in `cleared` and moves the fence, so guarded transactions and
-- client-side copies of frozen generations made before it are refused.
-- ARGV: uid, epoch, cleared, new cleared, g, then the g generations' seqs,
-- then for each block key '' (a bitmap: deleted) or 'rate|capacity' (a
-- RedisBloom generation: deleted and reserved again, empty, in the same
-- step). Returns 'OK' or 'STALE'.
local meta = KEYS[1]
if not current(meta, ARGV[1], ARGV[2], ARGV[3]) then return 'STALE' end
local g = tonumber(ARGV[5])
for i = 3, #KEYS do
  redis.call('UNLINK', KEYS[i])
  local spec = ARGV[5 + g + i - 2]
  if spec and spec ~= '' then
    local sep = string.find(spec, '|', 1, true)
    redis.call('BF.RESERVE', KEYS[i], string.sub(spec, 1, sep - 1), string.sub(spec, sep + 1), 'NONSCALING')
  end
end
for i = 6, 5 + g do redis.call('HSET', meta, 'gen.' .. ARGV[i] .. '.count', '0') end
redis.call('HSET', meta, 'cleared', ARGV[4])
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[4])
return 'OK'
