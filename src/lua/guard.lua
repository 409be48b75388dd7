-- rotabloom guard, protocol 1: the check that opens a guarded transaction
-- (WATCH fence; EVAL guard; MULTI; writes...; EXEC). If the caller's view
-- is current, no lazy rotation is due, every block it uses is whole and
-- the deciding generation has room, it changes nothing but the reservation
-- and the transaction runs; otherwise it rewrites the fence unchanged,
-- which aborts the transaction (WATCH sees any write), and says why. It
-- creates no key but the fence of a filter that exists (and the
-- reservations): a missing fence is written and deleted again, or, when
-- the metadata matches the caller's view, created.
-- KEYS[1]: fence; KEYS[2]: metadata hash; KEYS[3]: the reservations;
-- KEYS[4..]: the block keys the transaction reads or writes that must
-- exist (every block of a generation rotabloom made is allocated at its
-- full size when it is made: a missing or shorter one is lost data, and
-- reading it would answer "absent").
-- ARGV: 'UID:EPOCH:CLEARED', the view's lazy-rotation deadline in ms or '',
-- now in ms or '', then the reservation: its member 'SEQ:ITEMS:ID' or ''
-- (none), the deciding generation's seq, its capacity, the items the
-- transaction may add to it, the reservation's lifetime in ms; then, per
-- block key in KEYS[4..], its size in bytes, or '' when only its existence
-- is checked (a module's key).
-- A reservation holds room in the deciding generation for every item the
-- transaction may add, before it runs and until its commit releases it,
-- so that concurrent writers never take a generation past its capacity.
-- The fence alone does not prove the view: the metadata hash is read too,
-- and a hash that is gone (or of another instance) while the fence stayed
-- is STALE, never written to. Any error in here (a corrupt count, a key of
-- another type, another format under the name) aborts the transaction
-- before the error is returned: a guard that fails without touching the
-- fence would let the transaction run unchecked.
-- Returns 'OK' ('OK COUNT' with a reservation: the generation's count),
-- 'STALE', 'DUE NOW', 'FULL' (no room: nothing reserved), 'MISSING key...'
-- (space-separated), or 'WRONGTYPE key found needed' (a block of another
-- Redis type: 'string' for a bitmap, 'module' for a module's key).
local f = redis.call('GET', KEYS[1])

local function judge()
  if f ~= ARGV[1] then return 'STALE' end
  if redis.call('HGET', KEYS[2], 'uid') ~= string.match(ARGV[1], '^([^:]*):') then
    return 'STALE'
  end
  if ARGV[2] ~= '' then
    -- The deadline comes from the caller's view, which the fence just
    -- confirmed: no stored value is read.
    local now = tonumber(ARGV[3]) or now_ms()
    -- With the instant it judged by, at which the rotation is made.
    if now >= tonumber(ARGV[2]) then return 'DUE ' .. now end
  end
  local missing = {}
  for i = 4, #KEYS do
    local size = tonumber(ARGV[5 + i] or '')
    local fault = block_fault(KEYS[i], size)
    if fault == 'none' then
      missing[#missing + 1] = KEYS[i]
    elseif fault then
      return 'WRONGTYPE ' .. KEYS[i] .. ' ' .. fault .. ' ' .. (size and 'string' or 'module')
    end
  end
  if #missing > 0 then return 'MISSING ' .. table.concat(missing, ' ') end
  local member = ARGV[4] or ''
  if member == '' then return 'OK' end
  local seq, want = ARGV[5], tonumber(ARGV[7])
  local count = count_of(KEYS[2], 'gen.' .. seq .. '.count')
  if count + reserved_of(KEYS[3], seq) + want > tonumber(ARGV[6]) then return 'FULL' end
  local ttl = tonumber(ARGV[8])
  redis.call('ZADD', KEYS[3], now_ms() + ttl, member)
  -- The set lapses with its last member if nobody prunes it.
  redis.call('PEXPIRE', KEYS[3], ttl)
  return 'OK ' .. count
end

-- Aborts the transaction: a write to the watched fence, leaving it as it
-- was.
local function abort()
  if f then
    redis.call('SET', KEYS[1], f)
    return
  end
  local m = redis.pcall('HMGET', KEYS[2], 'uid', 'epoch', 'cleared')
  if type(m) == 'table' and m[1] and m[2] and ARGV[1] == m[1] .. ':' .. m[2] .. ':' .. (m[3] or '0') then
    -- A filter written before the fence existed: give it one (this
    -- write still aborts this transaction; the retry passes).
    redis.call('SET', KEYS[1], ARGV[1])
  else
    redis.call('SET', KEYS[1], '')
    redis.call('DEL', KEYS[1])
  end
end

local ok, verdict = pcall(judge)
if not ok then
  abort()
  -- The error as the failing call gave it ('CORRUPT field ...'), without
  -- the position a re-raise would add.
  if type(verdict) == 'table' and verdict.err then return redis.error_reply(verdict.err) end
  return redis.error_reply(tostring(verdict))
end
if verdict ~= 'OK' and string.sub(verdict, 1, 3) ~= 'OK ' then abort() end
return verdict
