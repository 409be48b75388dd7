-- rotabloom expand, protocol 1: freezes the newest generation by adding a
-- new one, if the caller's view is current (compare-and-set on the epoch).
-- KEYS[1]: metadata hash; KEYS[2]: fence. ARGV: uid, epoch, seq, bits, hashes, blocks,
-- capacity, scheme. Returns the new epoch, or 'STALE'.
local meta = KEYS[1]
local cur = redis.call('HMGET', meta, 'uid', 'epoch', 'next_seq')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] or cur[3] ~= ARGV[3] then return 'STALE' end
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local nf = 'gen.' .. ARGV[3] .. '.'
redis.call('HSET', meta,
  nf .. 'bits', ARGV[4], nf .. 'hashes', ARGV[5], nf .. 'blocks', ARGV[6],
  nf .. 'capacity', ARGV[7], nf .. 'scheme', ARGV[8], nf .. 'count', '0',
  nf .. 'created_at', now,
  'gens', redis.call('HGET', meta, 'gens') .. ',' .. ARGV[3],
  'next_seq', tostring(tonumber(ARGV[3]) + 1))
local e = redis.call('HINCRBY', meta, 'epoch', 1)
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. e .. ':' .. (redis.call('HGET', meta, 'cleared') or '0'))
return e
