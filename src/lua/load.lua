-- rotabloom load, protocol 1: reads the metadata hash and the fence in one
-- atomic step, so that the client can check that they agree. Writes nothing.
-- KEYS[1]: metadata hash; KEYS[2]: fence.
-- Returns {type of the metadata key, HGETALL or {}, the fence or false};
-- a fence of the wrong type gives {'fence:' .. its type, {}, false}.
local function typeof(k)
  local ty = redis.call('TYPE', k)
  return ty.ok or ty
end
local t = typeof(KEYS[1])
if t ~= 'hash' then return {t, {}, false} end
local ft = typeof(KEYS[2])
if ft ~= 'string' and ft ~= 'none' then return {'fence:' .. ft, {}, false} end
return {t, redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[2])}
