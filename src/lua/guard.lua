-- rotabloom guard, protocol 1: the check that opens a guarded transaction
-- (WATCH fence; EVAL guard; MULTI; writes...; EXEC). If the caller's view
-- is current and no lazy rotation is due it changes nothing and the
-- transaction runs; otherwise it rewrites the fence unchanged, which aborts
-- the transaction (WATCH sees any write), and says why. It creates no key
-- but the fence of a filter that exists: a missing fence is written and
-- deleted again, or, when the metadata matches the caller's view, created.
-- KEYS[1]: fence; KEYS[2]: metadata hash; KEYS[3..]: the block keys the
-- transaction reads or writes that must exist (every block of a generation
-- rotabloom made is allocated when it is made: a missing one is lost data,
-- and reading it would answer "absent"). ARGV: 'UID:EPOCH:CLEARED', the
-- view's lazy-rotation deadline in ms or '', now in ms or ''.
-- Returns 'OK', 'STALE', 'DUE', or 'MISSING key...' (space-separated).
local f = redis.call('GET', KEYS[1])
local verdict = 'OK'
if f ~= ARGV[1] then
  verdict = 'STALE'
elseif ARGV[2] ~= '' then
  -- The deadline comes from the caller's view, which the fence just
  -- confirmed: no stored value is read.
  local now = tonumber(ARGV[3])
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if now >= tonumber(ARGV[2]) then verdict = 'DUE' end
end
if verdict == 'OK' then
  local missing = {}
  for i = 3, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 0 then missing[#missing + 1] = KEYS[i] end
  end
  if #missing > 0 then verdict = 'MISSING ' .. table.concat(missing, ' ') end
end
if verdict ~= 'OK' then
  if f then
    redis.call('SET', KEYS[1], f)
  else
    local m = redis.call('HMGET', KEYS[2], 'uid', 'epoch', 'cleared')
    if m[1] and ARGV[1] == m[1] .. ':' .. m[2] .. ':' .. (m[3] or '0') then
      -- A filter written before the fence existed: give it one (this
      -- write still aborts this transaction; the retry passes).
      redis.call('SET', KEYS[1], ARGV[1])
    else
      redis.call('SET', KEYS[1], '')
      redis.call('DEL', KEYS[1])
    end
  end
end
return verdict
