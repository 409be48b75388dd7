-- rotabloom commit, protocol 1: adds the items a guarded transaction found
-- new to their generations' counts, for generations still listed (a
-- generation rotated away meanwhile takes its count with it).
-- KEYS[1]: metadata hash. ARGV: uid, then pairs (seq, added). Returns
-- each pair's count afterwards (-1: the generation is gone), or an empty
-- array when the filter is another instance now.
local meta = KEYS[1]
if redis.call('HGET', meta, 'uid') ~= ARGV[1] then return {} end
local out = {}
for i = 2, #ARGV, 2 do
  local f = 'gen.' .. ARGV[i] .. '.'
  if redis.call('HEXISTS', meta, f .. 'bits') == 1 then
    count_of(meta, f .. 'count')
    out[#out + 1] = redis.call('HINCRBY', meta, f .. 'count', ARGV[i + 1])
  else
    out[#out + 1] = -1
  end
end
return out
