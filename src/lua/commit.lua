-- rotabloom commit, protocol 1: releases a guarded transaction's
-- reservation, and adds to their generations' counts the items it found
-- new, for generations still listed (a generation rotated away meanwhile
-- takes its count with it) of the same instance and clear count (a clear
-- resets the counts).
-- KEYS[1]: metadata hash; KEYS[2]: the reservations. ARGV: uid, cleared,
-- the reservation's member or '', then pairs (seq, added).
-- Returns each pair's count afterwards (-1: the generation is gone), or an
-- empty array when the filter is another instance or was cleared since.
local meta = KEYS[1]
if ARGV[3] ~= '' then redis.call('ZREM', KEYS[2], ARGV[3]) end
local cur = redis.call('HMGET', meta, 'uid', 'cleared')
if cur[1] ~= ARGV[1] or (cur[2] or '0') ~= ARGV[2] then return {} end
local out = {}
for i = 4, #ARGV, 2 do
  local f = 'gen.' .. ARGV[i] .. '.'
  if redis.call('HEXISTS', meta, f .. 'bits') == 1 then
    count_of(meta, f .. 'count')
    out[#out + 1] = redis.call('HINCRBY', meta, f .. 'count', ARGV[i + 1])
  else
    out[#out + 1] = -1
  end
end
return out
