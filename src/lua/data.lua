-- rotabloom data script, protocol 1: add / has / cai (check-and-insert).
--
-- KEYS[1] is the metadata hash, KEYS[2] the fence, KEYS[3] the
-- reservations of guarded transactions in flight (see the guard); KEYS[4..]
-- are, for each generation named in ARGV in order, the block keys the
-- call's items touch (ascending), then, for a call with a record, the
-- record key last. The client computes every
-- bit position and every key name; this script checks that the client's
-- view of the filter is current and then applies the bits, all in one
-- atomic step. Structure never changes here: a full generation is reported
-- (FULL) and the client appends the next one with the roll script.
--
-- ARGV: op, uid, epoch, cleared, n, due, now, ngroups, first, ttl, round,
-- then per group:
--   role ('q' query only, 'd' decides and is written, 'w' written only;
--   upper case for a module's generation (MODULE_GROUP); 'l' the client's
--   findings in the generations it mirrors: k 0, no keys, one '1'/'0' per
--   item), seq, k, nblocks (the block
--   keys passed for the group), capacity (0:
--   no limit), must ('=SIZE': every block key must exist and hold at least
--   SIZE bytes, as rotabloom allocates it; '1': every block key must exist
--   (a module's key); '0': an adopted legacy bitmap, whose never-written
--   blocks may be absent), then
--   n * (block, k positions), block being the index of the item's block
--   among the keys passed, or for a module's generation n * (item).
-- A capacity above 0 on the deciding group means writes stop there: the
-- group never holds more than it was sized for, counting the room
-- reserved by guarded transactions in flight.
-- due is the view's lazy-rotation deadline in ms, or '' (the fence check
-- confirms the view, so no stored value is read); now is the caller's clock
-- in ms, or '' for the server's. Once due, writes and reads wait (DUE).
-- round, when not '', names the round of calls this one is part of (a
-- capped write cut into several calls, pipelined): once one of them stops
-- at capacity, the later ones write nothing (BUSY, nothing done), so that
-- what the round wrote is always a prefix of its items, even when room
-- held by transactions came back between two of its calls. The mark is a
-- member 'stop:ROUND' of the reservations, lapsing after 5 s.
-- first and ttl make a write exactly once across a lost reply: ttl ''
-- means no record; else the record key (a string, one byte per item of the
-- caller's batch: '0'/'1' once answered) keeps each answer for ttl ms,
-- item i of this call being item first + i of the batch. Items already
-- answered there are answered from it, without a check of the view (they
-- were answered with the view of their time) and without a write: a
-- retried call gives the original answers, never "seen" for its own items.
--
-- Returns {status, processed, flags, fill, count}: status OK, STALE (nothing
-- done), DUE (nothing done: rotate first; a sixth element is the instant,
-- in ms, the deadline was judged by), FULL (the deciding group is at
-- its capacity and items are left), BUSY (it would be, but part of it is
-- reserved by transactions in flight, which may leave it unused: try the
-- rest again), WRONGTYPE (nothing done: flags holds a block key, the
-- Redis type found there, and 'string' or 'module', the kind of key it
-- must be) or MISSING (nothing done:
-- flags holds
-- the missing block keys, separated by spaces; every block is allocated
-- when its generation is made, so a missing one is lost data); processed is how many items (a prefix
-- of the input) were handled; flags holds one '0'/'1' per handled item;
-- fill is the deciding group's count after the call when it is capped,
-- else -1; count is the deciding group's count after a write, capped or
-- not, else -1. A module group's count is the module's own:
-- it keeps no gen.<seq>.count and reserves no room.
local meta = KEYS[1]
local op = ARGV[1]
local n = tonumber(ARGV[5])

-- The record first: answers given before stand whatever happened since.
local rec, first, known = nil, 0, ''
if ARGV[10] ~= '' then
  rec, first = KEYS[#KEYS], tonumber(ARGV[9])
  known = redis.call('GETRANGE', rec, first, first + n - 1)
end
-- Answered items at the start of the call: returned as they were.
local kn = 0
while kn < #known and string.byte(known, kn + 1) ~= 0 do kn = kn + 1 end
if kn > 0 then
  return {'OK', kn, string.sub(known, 1, kn), -1}
end
-- Handled here: the items before the first answered one.
local upto = n
for i = 1, #known do
  if string.byte(known, i) ~= 0 then upto = i - 1; break end
end

local groups = {}
local a, kix = 12, 4

for g = 1, tonumber(ARGV[8]) do
  local k = tonumber(ARGV[a + 2])
  local role = ARGV[a]
  local bf = role ~= string.lower(role)
  local grp = {role = string.lower(role), bf = bf, seq = ARGV[a + 1], k = k, nb = tonumber(ARGV[a + 3]),
               cap = tonumber(ARGV[a + 4]), must = ARGV[a + 5], key0 = kix, base = a + 6,
               stride = bf and 1 or k + 1}
  kix = kix + grp.nb
  a = a + 6 + n * grp.stride
  groups[g] = grp
end

-- The view check and every count this call may add to, in one HMGET, all
-- checked before any bit is written (a script is not rolled back when it
-- fails halfway). A module's generation counts itself.
local fields = {'uid', 'epoch', 'cleared'}
if op ~= 'has' then
  for _, grp in ipairs(groups) do
    if (grp.role == 'd' or grp.role == 'w') and not grp.bf then
      fields[#fields + 1] = 'gen.' .. grp.seq .. '.count'
    end
  end
end
local cur = redis.call('HMGET', meta, unpack(fields))
if not (cur[1] == ARGV[2] and cur[2] == ARGV[3] and (cur[3] or '0') == ARGV[4]) then
  return {'STALE', 0, '', -1}
end
local counts = {}
for i = 4, #fields do
  counts[fields[i]] = count_val(fields[i], cur[i])
end
if ARGV[6] ~= '' then
  local now = tonumber(ARGV[7]) or now_ms()
  if now >= tonumber(ARGV[6]) then
    -- The instant it judged by goes back: the rotation is made at it.
    return {'DUE', 0, '', -1, -1, now}
  end
end
local round = ARGV[11] or ''
if round ~= '' and redis.call('ZSCORE', KEYS[3], 'stop:' .. round) then
  return {'BUSY', 0, '', -1}
end

-- A missing block would answer "absent" for everything it held, and so
-- would the lost end of a shorter one.
local missing
for _, grp in ipairs(groups) do
  if grp.must ~= '0' then
    local size = tonumber(string.match(grp.must, '^=(%d+)$'))
    for b = 0, grp.nb - 1 do
      local key = KEYS[grp.key0 + b]
      local fault = block_fault(key, size)
      if fault == 'none' then
        missing = missing or {}
        missing[#missing + 1] = key
      elseif fault then
        -- A bitmap block, or a module's key, replaced by another type:
        -- damaged, and said so.
        return {'WRONGTYPE', 0, key .. ' ' .. fault .. ' ' .. (size and 'string' or 'module'), -1}
      end
    end
  end
end
if missing then
  return {'MISSING', 0, table.concat(missing, ' '), -1}
end
-- The arguments are parsed; from here on n is the items to handle.
n = upto

-- Filters written before the fence existed get one on first write (NX:
-- one call, and an existing fence is left as it is, untouched).
if op ~= 'has' then
  redis.call('SET', KEYS[2], ARGV[2] .. ':' .. ARGV[3] .. ':' .. ARGV[4], 'NX')
end


-- Unpack pushes every argument on Lua's C stack, which holds 8000 slots.
local MAXARGS = 7800
-- Bits per BITFIELD: Redis makes an object of every argument of a command
-- and frees it after; commands of about a hundred bits keep those in the
-- allocator's cache, where commands of thousands (up to MAXARGS) cost some
-- 15% more server time per bit (measured on Redis 7.0).
local BITS_PER_COMMAND = 128

-- Reads or writes the bits of the listed items (0-based indexes), all in
-- the block `key`, marking in `full` each item whose bits were all set.
local function bitfield(grp, key, list, set, full)
  local k, stride, base = grp.k, grp.stride, grp.base
  local per = math.max(1, math.floor(BITS_PER_COMMAND / k))
  local verb = set and 'SET' or 'GET'
  local s = 1
  while s <= #list do
    local e = math.min(#list, s + per - 1)
    local cmd, c = {}, 0
    for t = s, e do
      local p = base + list[t] * stride + 1
      for q = p, p + k - 1 do
        cmd[c + 1] = verb; cmd[c + 2] = 'u1'; cmd[c + 3] = ARGV[q]
        if set then cmd[c + 4] = '1'; c = c + 4 else c = c + 3 end
      end
    end
    local r
    if set then
      r = redis.call('BITFIELD', key, unpack(cmd))
    else
      r = redis.call('BITFIELD_RO', key, unpack(cmd))
    end
    local o = 0
    for t = s, e do
      local all = true
      for q = o + 1, o + k do
        if r[q] == 0 then all = false; break end
      end
      full[list[t]] = all
      o = o + k
    end
    s = e + 1
  end
end

-- Applies one group's reads or writes for the listed items; returns the
-- table of items whose bits were all set already and, for a module that
-- refused part of a write, the first item it did not take.
local function apply(grp, items, set)
  if grp.bf then
    return MODULE_GROUP.apply(KEYS[grp.key0], items, set,
                              function(i) return ARGV[grp.base + i] end, MAXARGS)
  end
  local full = {}
  if grp.role == 'l' then
    for _, i in ipairs(items) do full[i] = ARGV[grp.base + i] == '1' end
  elseif grp.nb == 1 then
    -- A generation of one block, or a call whose items all fall in one
    -- (every single item): no grouping.
    bitfield(grp, KEYS[grp.key0], items, set, full)
  else
    -- Grouped by the block's argument as it came (a string): converted
    -- once per block, not once per item.
    local byblock, order = {}, {}
    for _, i in ipairs(items) do
      local b = ARGV[grp.base + i * grp.stride]
      local l = byblock[b]
      if not l then l = {}; byblock[b] = l; order[#order + 1] = b end
      l[#l + 1] = i
    end
    for _, b in ipairs(order) do
      bitfield(grp, KEYS[grp.key0 + tonumber(b)], byblock[b], set, full)
    end
  end
  return full
end

-- The items of `items` not marked in `found`.
local function without(items, found)
  local out = {}
  for _, i in ipairs(items) do
    if not found[i] then out[#out + 1] = i end
  end
  return out
end

local yes = {}
local processed = n
local status = 'OK'
local fill = -1
-- The deciding group's count after the call, capped or not (writes).
local count = -1

if op == 'has' then
  -- An item found in one generation is not looked up in the others.
  local items = {}
  for i = 0, n - 1 do items[#items + 1] = i end
  for _, grp in ipairs(groups) do
    if grp.role ~= 'w' and #items > 0 then
      for i, f in pairs(apply(grp, items, false)) do
        if f then yes[i] = true end
      end
      items = without(items, yes)
    end
  end
else
  -- add or cai. Candidates are the items to write: all of them for add,
  -- those no queried generation holds for cai.
  local present = {}
  if op == 'cai' then
    -- The items still to look up, listed at the first queried group (a
    -- filter of one generation has none).
    local items
    for _, grp in ipairs(groups) do
      if grp.role == 'q' or grp.role == 'l' then
        if not items then
          items = {}
          for i = 0, n - 1 do items[i + 1] = i end
        end
        if #items > 0 then
          for i, f in pairs(apply(grp, items, false)) do
            if f then present[i] = true end
          end
          items = without(items, present)
        end
      end
    end
  end
  local cand = {}
  for i = 0, n - 1 do
    if not present[i] then cand[#cand + 1] = i end
  end
  for _, grp in ipairs(groups) do
    if grp.role == 'd' then
      local added = 0
      -- A module's generation caps itself (it refuses the first item past
      -- its capacity) and counts itself: no count or room is kept here.
      if grp.cap == 0 or grp.bf then
        local have, stop = apply(grp, cand, true)
        for i, f in pairs(have) do
          if not f then yes[i] = true; added = added + 1 end
        end
        if stop then
          -- The module refused the rest: handled up to there.
          processed = stop
          status = 'FULL'
        end
      else
        -- Capped: write in input order, never past capacity, so a
        -- generation holds exactly what it was sized for. Once it is
        -- full, items it already holds need no room: they are answered,
        -- and the first item that would need room is refused, with every
        -- item after it.
        local cap, cnt = grp.cap, counts['gen.' .. grp.seq .. '.count']
        local held = reserved_of(KEYS[3], grp.seq)
        local s, refused = 1, false
        while s <= #cand and not refused do
          local room = cap - cnt - held
          -- At most `room` writes; once full, reads of 128 items at a time.
          local e = math.min(#cand, s + (room > 0 and room or 128) - 1)
          local slice = {}
          for t = s, e do slice[#slice + 1] = cand[t] end
          if room > 0 then
            local have = apply(grp, slice, true)
            for i, f in pairs(have) do
              if not f then yes[i] = true; added = added + 1; cnt = cnt + 1 end
            end
            s = e + 1
          else
            local have = apply(grp, slice, false)
            for t = s, e do
              if not have[cand[t]] then refused = true; break end
              s = t + 1
            end
          end
        end
        if s <= #cand then
          processed = cand[s]
          status = held > 0 and 'BUSY' or 'FULL'
        end
        fill = cnt
      end
      if grp.bf then
        -- The module's own count, exact and kept with its items (FORMAT.md
        -- section 6.6).
        count = MODULE_GROUP.count(KEYS[grp.key0])
        if grp.cap > 0 then fill = count end
      elseif added > 0 then
        count = redis.call('HINCRBY', meta, 'gen.' .. grp.seq .. '.count', added)
      else
        count = counts['gen.' .. grp.seq .. '.count']
      end
    end
  end
  -- Write-only generations take what the decide group accepted (cai) or
  -- every handled item (add).
  for _, grp in ipairs(groups) do
    if grp.role == 'w' then
      local items = {}
      for i = 0, processed - 1 do
        if op == 'add' or yes[i] then items[#items + 1] = i end
      end
      local added = 0
      local have, stop = apply(grp, items, true)
      for i, f in pairs(have) do
        if not f then added = added + 1 end
      end
      if added > 0 and not grp.bf then
        redis.call('HINCRBY', meta, 'gen.' .. grp.seq .. '.count', added)
      end
      if stop then
        -- A younger generation never holds more than the deciding one,
        -- so its module cannot be full before it: this is not a state
        -- rotabloom makes, and an item it did not take would be lost
        -- from the window later. Said, not hidden.
        return redis.error_reply('CORRUPT gen.' .. grp.seq .. ' the module generation refused items while an older one had room for them')
      end
    end
  end
end

if round ~= '' and (status == 'FULL' or status == 'BUSY') then
  redis.call('ZADD', KEYS[3], now_ms() + 5000, 'stop:' .. round)
  if redis.call('PTTL', KEYS[3]) < 5000 then redis.call('PEXPIRE', KEYS[3], 5000) end
end
local out = {}
for i = 0, processed - 1 do
  out[i + 1] = yes[i] and '1' or '0'
end
local flags = table.concat(out)
if rec and processed > 0 then
  if known == '' and first == 0 then
    -- No record yet (GETRANGE found none at its start, in this same
    -- atomic step): one SET makes it with its lifetime.
    redis.call('SET', rec, flags, 'PX', ARGV[10])
  else
    redis.call('SETRANGE', rec, first, flags)
    redis.call('PEXPIRE', rec, ARGV[10])
  end
end
return {status, processed, flags, fill, count}
