-- rotabloom script prelude, protocol 1: put before the scripts that change a
-- filter. A script never trusts a stored number it has not checked: a
-- malformed one is an error reply 'CORRUPT <field> ...', which the client
-- reports as corrupt metadata naming the field.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Redis's own types: a key a module manages (a module's generation) that
-- holds one of them was replaced.
local CORE_TYPES = {string = true, hash = true, list = true, set = true, zset = true, stream = true}

-- What is wrong with a block key, if anything: nil (whole), 'none'
-- (missing, empty or shorter than `size` bytes: lost data, which would
-- answer "absent" for everything it held) or the Redis type found where
-- another must be. `size` is a bitmap block's size in bytes, nil for a
-- module's generation (which must exist and be a module's key). One call for a
-- bitmap block: STRLEN answers 0 for a missing key and fails on another
-- type, which TYPE then names; a module's key answers STRLEN with an error
-- too, so TYPE it is.
local function block_fault(key, size)
  if size then
    local len = redis.pcall('STRLEN', key)
    if type(len) == 'number' then
      if len < size or len == 0 then return 'none' end
      return nil
    end
    return redis.call('TYPE', key)['ok']
  end
  local t = redis.call('TYPE', key)['ok']
  if t == 'none' or CORE_TYPES[t] then return t end
  return nil
end

-- Whether the metadata still is what the caller's view says: same instance,
-- same structure, same clear count (absent means 0).
local function current(meta, uid, epoch, cleared)
  local cur = redis.call('HMGET', meta, 'uid', 'epoch', 'cleared')
  return cur[1] == uid and cur[2] == epoch and (cur[3] or '0') == cleared
end

-- A counter field's value v (false: absent, which is 0); anything but a
-- canonical unsigned integer that Lua holds exactly is corrupt.
local function count_val(f, v)
  if not v then return 0 end
  if #v > 15 or not (v == '0' or string.match(v, '^[1-9]%d*$')) then
    error({err = 'CORRUPT ' .. f .. ' holds a value that is not a count'})
  end
  return tonumber(v)
end

-- A counter field that the script adds to, read and checked.
local function count_of(meta, f)
  return count_val(f, redis.call('HGET', meta, f))
end


-- The items of generation seq promised to guarded transactions between
-- their guards and their commits: members 'SEQ:ITEMS:ID' of the sorted
-- set `key`, scored by their deadline in ms (server clock). A writer that
-- died in between leaves a member nobody releases: it lapses at its
-- deadline, and is dropped here first.
local function reserved_of(key, seq)
  if redis.call('EXISTS', key) == 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms())
  local sum = 0
  for _, m in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    local s, k = string.match(m, '^(%d+):(%d+):')
    if s == seq then sum = sum + tonumber(k) end
  end
  return sum
end
