-- rotabloom prealloc, protocol 1: gives one block its full size ahead of
-- need, so no later write allocates a large string inside a script (the
-- first SETBIT near 2^32 bits blocks Redis for about 0.3 s). One block per
-- call: other clients' commands run between the calls.
-- KEYS[1]: metadata hash; KEYS[2]: the block. ARGV: uid, epoch, bytes; or
-- uid, epoch, a module's tag ('bf'), error rate, capacity for a module's
-- generation.
-- Only while the caller's view of the structure is current (the block then
-- belongs to a listed generation or to the one the view makes next); never
-- shrinks, never changes a bit: the byte written lies past the string's
-- current end, where every bit reads 0.
local cur = redis.call('HMGET', KEYS[1], 'uid', 'epoch')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then return 'STALE' end
local module = MODULES[ARGV[3]]
if module then
  -- A module's generation: reserved once, never re-created over data.
  if redis.call('EXISTS', KEYS[2]) == 0 then
    local r = module.reserve(KEYS[2], ARGV[4], ARGV[5])
    if type(r) == 'table' and r.err then return r end
    return 'GREW'
  end
  return 'OK'
end
local bytes = tonumber(ARGV[3])
if redis.call('STRLEN', KEYS[2]) < bytes then
  redis.call('SETRANGE', KEYS[2], bytes - 1, '\0')
  return 'GREW'
end
return 'OK'
