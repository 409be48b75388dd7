-- rotabloom restore, protocol 1: publishes a restored filter whose blocks
-- are already written under its fresh uid.
-- KEYS[1]: metadata hash; KEYS[2]: fence. ARGV[1]: the fence's value;
-- ARGV[2..]: field/value pairs of the metadata.
-- Returns 'OK', or 'EXISTS' (a filter has the name; nothing written).
if redis.call('EXISTS', KEYS[1]) == 1 then return 'EXISTS' end
-- HSET in slices: unpack() of thousands of values overflows Lua's stack.
local i = 2
while i <= #ARGV do
  local last = math.min(i + 999, #ARGV)
  redis.call('HSET', KEYS[1], unpack(ARGV, i, last))
  i = last + 1
end
redis.call('SET', KEYS[2], ARGV[1])
return 'OK'
