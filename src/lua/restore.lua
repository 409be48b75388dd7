-- rotabloom restore, protocol 1: publishes a restored filter whose blocks
-- are already written under its fresh uid, each with a time to live
-- (restore_write.lua); they become permanent here, in the same step that
-- writes the metadata that names them.
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3..]: every block the
-- restore wrote. ARGV[1]: the fence's value; ARGV[2..]: field/value pairs
-- of the metadata.
-- Returns 'OK'; 'EXISTS' (a filter has the name); or {'GONE', key...}
-- (blocks that expired or were evicted before this step). Nothing is
-- written unless 'OK'.
if redis.call('EXISTS', KEYS[1]) == 1 then return 'EXISTS' end
local gone = {'GONE'}
for i = 3, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then gone[#gone + 1] = KEYS[i] end
end
if #gone > 1 then return gone end
for i = 3, #KEYS do
  redis.call('PERSIST', KEYS[i])
end
-- HSET in slices: unpack() of thousands of values overflows Lua's stack.
local i = 2
while i <= #ARGV do
  local last = math.min(i + 999, #ARGV)
  redis.call('HSET', KEYS[1], unpack(ARGV, i, last))
  i = last + 1
end
redis.call('SET', KEYS[2], ARGV[1])
return 'OK'
