-- rotabloom prealloc, protocol 1: gives one block its full size ahead of
-- need, so no later write allocates a large string inside a script (the
-- first SETBIT near 2^32 bits blocks Redis for about 0.3 s). One block per
-- call: other clients' commands run between the calls.
-- KEYS[1]: metadata hash; KEYS[2]: the block. ARGV: uid, seq, bytes; or
-- uid, seq, 'bf', error rate, capacity for a RedisBloom generation.
-- Only blocks of a listed generation or of one of the next ones (seq >=
-- next_seq, the next generation or, after missed rotations, the ones after)
-- of the same filter instance; never shrinks, never changes a bit: the byte
-- written lies past the string's current end, where every bit reads 0.
local cur = redis.call('HMGET', KEYS[1], 'uid', 'next_seq', 'gens')
if cur[1] ~= ARGV[1] then return 'STALE' end
local ahead = tonumber(ARGV[2]) - tonumber(cur[2])
if (ahead < 0 or ahead >= 256) and not string.find(',' .. cur[3] .. ',', ',' .. ARGV[2] .. ',', 1, true) then
  return 'STALE'
end
if ARGV[3] == 'bf' then
  -- A RedisBloom generation: reserved once, never re-created over data.
  if redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('BF.RESERVE', KEYS[2], ARGV[4], ARGV[5], 'NONSCALING')
    return 'GREW'
  end
  return 'OK'
end
local bytes = tonumber(ARGV[3])
if redis.call('STRLEN', KEYS[2]) < bytes then
  redis.call('SETRANGE', KEYS[2], bytes - 1, '\0')
  return 'GREW'
end
return 'OK'
