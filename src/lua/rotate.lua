-- rotabloom rotate, protocol 1: drops the k oldest generations (UNLINK) and
-- appends k new ones, if the caller's view is current (compare-and-set on
-- the epoch and, for scheduled rotations, on the period).
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3..]: every block key of
-- the k oldest generations. ARGV: uid, epoch, expected period ('' for a manual rotation,
-- which leaves the schedule alone), new period, next due time (ms), k, then
-- k specs 'seq|bits|hashes|blocks|capacity|scheme'.
-- Returns the new epoch, or 'STALE' (nothing done).
local meta = KEYS[1]
local cur = redis.call('HMGET', meta, 'uid', 'epoch', 'period', 'gens')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then return 'STALE' end
if ARGV[3] ~= '' and cur[3] ~= ARGV[3] then return 'STALE' end
local k = tonumber(ARGV[6])
local list = {}
for s in string.gmatch(cur[4], '[^,]+') do list[#list + 1] = s end
if k < 1 or k > #list then return redis.error_reply('rotate: bad count') end
for i = 3, #KEYS do redis.call('UNLINK', KEYS[i]) end
for i = 1, k do
  local f = 'gen.' .. list[i] .. '.'
  redis.call('HDEL', meta, f .. 'bits', f .. 'hashes', f .. 'blocks', f .. 'scheme',
    f .. 'capacity', f .. 'count', f .. 'created_at')
end
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local kept = {}
for i = k + 1, #list do kept[#kept + 1] = list[i] end
local last
for i = 7, 6 + k do
  local sp = {}
  for v in string.gmatch(ARGV[i], '[^|]+') do sp[#sp + 1] = v end
  local f = 'gen.' .. sp[1] .. '.'
  redis.call('HSET', meta, f .. 'bits', sp[2], f .. 'hashes', sp[3], f .. 'blocks', sp[4],
    f .. 'capacity', sp[5], f .. 'scheme', sp[6], f .. 'count', '0', f .. 'created_at', now)
  kept[#kept + 1] = sp[1]
  last = tonumber(sp[1])
end
redis.call('HSET', meta, 'gens', table.concat(kept, ','), 'next_seq', tostring(last + 1))
if ARGV[3] ~= '' then
  redis.call('HSET', meta, 'period', ARGV[4], 'due_at', ARGV[5])
end
local e = redis.call('HINCRBY', meta, 'epoch', k)
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. e .. ':' .. (redis.call('HGET', meta, 'cleared') or '0'))
return e
