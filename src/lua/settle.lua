-- rotabloom settle, protocol 1: queued inside a guarded transaction after
-- its writes, so it runs only if they do, under the guard's fence
-- (docs/FORMAT.md §8.5.3). While the deciding generation keeps a tenth of
-- its capacity free after it, it adds to each written generation's count
-- every item the transaction wrote there (an upper bound of the new ones;
-- the client takes the excess back after) and releases the reservation:
-- the transaction needs no commit after it when all its items were new.
-- Closer to capacity it changes nothing and answers 'AFTER': the client
-- counts the new items after the transaction and releases the room then,
-- so that no writer ever finds a generation full while room only an
-- over-count holds is still owed back.
-- KEYS[1]: metadata hash; KEYS[2]: the reservations. ARGV: the
-- reservation's member or '', the deciding generation's seq or '' (none
-- that this count limits), its capacity, then pairs (seq, written).
-- Returns each pair's count afterwards, or 'AFTER'.
local meta, res = KEYS[1], KEYS[2]
local counts = {}
for i = 4, #ARGV, 2 do
  local f = 'gen.' .. ARGV[i] .. '.count'
  counts[#counts + 1] = count_of(meta, f) + tonumber(ARGV[i + 1])
end
if ARGV[2] ~= '' then
  local cap = tonumber(ARGV[3])
  for i = 4, #ARGV, 2 do
    if ARGV[i] == ARGV[2] then
      local own = 0
      if ARGV[1] ~= '' then own = tonumber(string.match(ARGV[1], '^%d+:(%d+):')) or 0 end
      local others = reserved_of(res, ARGV[2]) - own
      if cap - counts[(i - 2) / 2] - others < math.ceil(cap / 10) then
        return 'AFTER'
      end
    end
  end
end
if ARGV[1] ~= '' then redis.call('ZREM', res, ARGV[1]) end
for i = 4, #ARGV, 2 do
  redis.call('HINCRBY', meta, 'gen.' .. ARGV[i] .. '.count', ARGV[i + 1])
end
return counts
