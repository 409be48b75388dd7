-- rotabloom drop, protocol 1: removes the filter at once, leaving its
-- blocks in the trash list for the client to delete one per step.
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3]: the trash list;
-- KEYS[4..]: every block key of every generation, and of the next one if
-- it was allocated ahead of need.
-- ARGV: uid, epoch, cleared. Returns 'OK', 'GONE' or 'STALE'.
--
-- The metadata goes first, with the fence: from this step on every reader
-- finds no filter (never one with its blocks half gone), and every writer's
-- view check fails, so no batch can write a bit or a record under the name
-- until it is created again.
local meta = KEYS[1]
if redis.call('EXISTS', meta) == 0 then return 'GONE' end
if not current(meta, ARGV[1], ARGV[2], ARGV[3]) then return 'STALE' end
-- Only blocks that exist: the next generation's are usually not there,
-- and each entry costs the client a round trip.
local blocks = {}
for i = 4, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then blocks[#blocks + 1] = KEYS[i] end
end
-- RPUSH in slices: unpack() of thousands of values overflows Lua's stack.
local i = 1
while i <= #blocks do
  local last = math.min(i + 999, #blocks)
  redis.call('RPUSH', KEYS[3], unpack(blocks, i, last))
  i = last + 1
end
redis.call('UNLINK', meta, KEYS[2])
return 'OK'
