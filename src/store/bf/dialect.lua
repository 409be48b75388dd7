-- rotabloom's pieces for the BF.* dialect (RedisBloom, valkey-bloom),
-- protocol 1: put before the scripts that make, empty or use a module's
-- generation. The scripts name no module: they look it up here by the
-- tag their arguments carry ('bf' in an allocation's arguments; an
-- upper-case role letter marks a module group of the data script, and
-- protocol 1 has this one dialect, MODULE_GROUP).
local MODULES = {}
local BF = {}
MODULES.bf = BF
local MODULE_GROUP = BF

-- Reserves an empty non-scaling filter in `key`. A server without the
-- module is said as the server says it outside a script, so that the
-- client tells a missing module apart from any other refusal.
function BF.reserve(key, rate, capacity)
  local r = redis.pcall('BF.RESERVE', key, rate, capacity, 'NONSCALING')
  if type(r) == 'table' and r.err and string.find(string.lower(r.err), 'unknown') then
    return redis.error_reply("ERR unknown command 'BF.RESERVE': no bloom module")
  end
  return r
end

-- The module's own count of the items it added, exact and in the same
-- atomic step as its writes.
function BF.count(key)
  return redis.call('BF.CARD', key)
end

-- Applies BF.MEXISTS (set = false) or BF.INSERT (set = true) to the
-- listed items (0-based indexes; arg(i) is item i's argument), at most
-- `per` arguments a command. Returns a table: item -> true when the module
-- already held it, and, when the module refused an insert (a non-scaling
-- filter at its capacity), the index of the first item it did not take.
--
-- Valkey's Lua raises the whole reply as an error when one of its elements
-- is one, losing the answers before the refusal: so an insert never asks
-- for more new items than the module has room for (capacity less its
-- count; an item it holds takes none), and once it has none, the items it
-- holds are answered by BF.MEXISTS up to the first that would need room.
function BF.apply(key, items, set, arg, per)
  local full = {}
  local room
  if set then
    local cap = redis.call('BF.INFO', key, 'CAPACITY')
    if type(cap) == 'table' then cap = cap[1] end
    room = cap - redis.call('BF.CARD', key)
  end
  local s = 1
  while s <= #items do
    local e = math.min(#items, s + per - 1)
    local insert = set and room > 0
    if insert then e = math.min(e, s + room - 1) end
    local cmd = {}
    for t = s, e do cmd[#cmd + 1] = arg(items[t]) end
    local r
    if insert then
      r = redis.call('BF.INSERT', key, 'NOCREATE', 'ITEMS', unpack(cmd))
    else
      r = redis.call('BF.MEXISTS', key, unpack(cmd))
    end
    for t = s, e do
      local v = r[t - s + 1]
      if type(v) ~= 'number' then return full, items[t] end
      if insert then
        full[items[t]] = (v == 0)
        if v == 1 then room = room - 1 end
      else
        full[items[t]] = (v == 1)
        if set and v == 0 then return full, items[t] end
      end
    end
    s = e + 1
  end
  return full, nil
end
