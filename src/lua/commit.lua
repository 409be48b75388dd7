-- rotabloom commit, protocol 1: adds the items a guarded transaction found
-- new to their generations' counts, for generations still listed (a
-- generation rotated away meanwhile takes its count with it).
-- KEYS[1]: metadata hash. ARGV: uid, then pairs (seq, added).
local meta = KEYS[1]
if redis.call('HGET', meta, 'uid') ~= ARGV[1] then return 0 end
for i = 2, #ARGV, 2 do
  local f = 'gen.' .. ARGV[i] .. '.'
  if redis.call('HEXISTS', meta, f .. 'bits') == 1 then
    count_of(meta, f .. 'count')
    redis.call('HINCRBY', meta, f .. 'count', ARGV[i + 1])
  end
end
return 1
