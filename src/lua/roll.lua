-- rotabloom roll, protocol 1: the one structural change. Drops the d oldest
-- generations, appends a new ones, sets the epoch, rewrites the fence, if
-- the caller's view is current (compare-and-set on uid, epoch and clear
-- count, and on the expected fields). Expansion is d = 0, a = 1; a rotation
-- of k is d = a = k, with the schedule's state in the fields set; a
-- conversion is d = a = 0, expecting the old kind and setting the new one.
-- KEYS[1]: metadata hash; KEYS[2]: fence; KEYS[3]: trash list; KEYS[4..]:
-- every block key of the dropped generations, which go to the trash list
-- (the client deletes them afterwards, one per command: freeing a big
-- generation here would hold the server for long).
-- ARGV: uid, epoch, cleared, new epoch (epoch + max(a, 1)), new gens list,
--   new next_seq,
--   e, then e pairs (field, expected value),
--   d, then d seqs to drop,
--   a, then a specs (seq, bits, hashes, blocks, capacity, scheme),
--   s, then s pairs (field, value) to set.
-- Returns 'OK', or 'STALE' (nothing done).
local meta = KEYS[1]
if not current(meta, ARGV[1], ARGV[2], ARGV[3]) then return 'STALE' end
local a = 7
for _ = 1, tonumber(ARGV[a]) do
  if redis.call('HGET', meta, ARGV[a + 1]) ~= ARGV[a + 2] then return 'STALE' end
  a = a + 2
end
a = a + 1
local gone = {}
for _ = 1, tonumber(ARGV[a]) do
  local f = 'gen.' .. ARGV[a + 1] .. '.'
  for _, w in ipairs({'bits', 'hashes', 'blocks', 'scheme', 'capacity', 'count', 'created_at'}) do
    gone[#gone + 1] = f .. w
  end
  a = a + 1
end
a = a + 1
if #gone > 0 then redis.call('HDEL', meta, unpack(gone)) end
for i = 4, #KEYS do redis.call('RPUSH', KEYS[3], KEYS[i]) end
local now = string.format('%d', now_ms())
local set = {}
for _ = 1, tonumber(ARGV[a]) do
  local f = 'gen.' .. ARGV[a + 1] .. '.'
  for i, w in ipairs({'bits', 'hashes', 'blocks', 'capacity', 'scheme'}) do
    set[#set + 1] = f .. w; set[#set + 1] = ARGV[a + 1 + i]
  end
  set[#set + 1] = f .. 'count'; set[#set + 1] = '0'
  set[#set + 1] = f .. 'created_at'; set[#set + 1] = now
  a = a + 6
end
a = a + 1
for _ = 1, tonumber(ARGV[a]) do
  set[#set + 1] = ARGV[a + 1]; set[#set + 1] = ARGV[a + 2]
  a = a + 2
end
set[#set + 1] = 'gens'; set[#set + 1] = ARGV[5]
set[#set + 1] = 'next_seq'; set[#set + 1] = ARGV[6]
set[#set + 1] = 'epoch'; set[#set + 1] = ARGV[4]
redis.call('HSET', meta, unpack(set))
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. ARGV[4] .. ':' .. ARGV[3])
return 'OK'
