-- rotabloom create-or-open, protocol 1, optionally adopting existing
-- bitmaps as the blocks of the new filter's first generation.
-- KEYS[1]: metadata hash; KEYS[2..1+b]: bitmaps to adopt; KEYS[2+b..1+2b]:
-- the block keys they become (RENAME: O(1), no copy); KEYS[2+2b]: the fence;
-- KEYS[3+2b..]: the blocks allocated for this attempt with a lease
-- (alloc_new.lua), made permanent here with the metadata that names them.
-- ARGV: b, t, then t field names that get the server's time in
-- milliseconds, then field/value pairs.
-- Returns {'created', fields..., fence}, {'exists', fields..., fence}
-- (HGETALL and GET of the fence; nothing written), {'wrongtype', type} for the metadata key,
-- {'badsource', key, type} when a bitmap to adopt is not a string (or is
-- gone: type 'none'), {'taken', key, type} when a target key exists, or
-- {'gone', key} when a leased block lapsed or was evicted;
-- nothing is written then either. Atomic, so of many concurrent callers
-- exactly one creates, and the bitmaps move only with the metadata.
local meta = KEYS[1]
local function typeof(k)
  local ty = redis.call('TYPE', k)
  return ty.ok or ty
end
local b = tonumber(ARGV[1])
local fence = KEYS[2 + 2 * b]
local ty = typeof(meta)
if ty == 'hash' then
  return {'exists', redis.call('HGETALL', meta), redis.call('GET', fence)}
elseif ty ~= 'none' then
  return {'wrongtype', ty}
end
for i = 2, 1 + b do
  local st = typeof(KEYS[i])
  if st ~= 'string' then return {'badsource', KEYS[i], st} end
  local dt = typeof(KEYS[i + b])
  if dt ~= 'none' then return {'taken', KEYS[i + b], dt} end
end
for i = 3 + 2 * b, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then return {'gone', KEYS[i]} end
end
for i = 2, 1 + b do
  redis.call('RENAME', KEYS[i], KEYS[i + b])
end
for i = 3 + 2 * b, #KEYS do
  redis.call('PERSIST', KEYS[i])
end
local t = tonumber(ARGV[2])
local tm = redis.call('TIME')
local now = string.format('%d', tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000))
local args = {}
for i = 3, t + 2 do
  args[#args + 1] = ARGV[i]; args[#args + 1] = now
end
for i = t + 3, #ARGV do args[#args + 1] = ARGV[i] end
redis.call('HSET', meta, unpack(args))
local h = redis.call('HMGET', meta, 'uid', 'epoch')
redis.call('SET', fence, h[1] .. ':' .. h[2] .. ':0')
return {'created', redis.call('HGETALL', meta), redis.call('GET', fence)}
