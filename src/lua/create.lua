-- rotabloom create-or-open, protocol 1.
-- KEYS[1]: metadata hash. ARGV: t, then t field names that get the server's
-- time in milliseconds, then field/value pairs.
-- Returns {'created', fields...}, {'exists', fields...} (HGETALL, nothing
-- written) or {'wrongtype', type}. Atomic, so of many concurrent callers
-- exactly one creates.
local meta = KEYS[1]
local ty = redis.call('TYPE', meta)
ty = ty.ok or ty
if ty == 'hash' then
  return {'exists', redis.call('HGETALL', meta)}
elseif ty ~= 'none' then
  return {'wrongtype', ty}
end
local t = tonumber(ARGV[1])
local tm = redis.call('TIME')
local now = string.format('%d', tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000))
local args = {}
for i = 2, t + 1 do
  args[#args + 1] = ARGV[i]; args[#args + 1] = now
end
for i = t + 2, #ARGV do args[#args + 1] = ARGV[i] end
redis.call('HSET', meta, unpack(args))
return {'created', redis.call('HGETALL', meta)}
