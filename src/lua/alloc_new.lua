-- rotabloom alloc-new, protocol 1: allocates one block of a filter instance
-- being created (bytes up to its size, or a module's empty non-scaling
-- filter) with a time to live, in one atomic step: until the create
-- script names the instance and makes its blocks permanent, no block of it
-- exists without one, so a creation that dies (a lost connection, a killed
-- process) leaves nothing that outlives its lease.
-- KEYS[1]: the block. ARGV[1]: the time to live in ms; ARGV[2]: 'bytes'
-- then the size, or a module's tag ('bf') then the error rate and the
-- capacity.
-- Returns 'OK', or 'EXISTS' (nothing written: the key is someone else's).
if redis.call('EXISTS', KEYS[1]) == 1 then return 'EXISTS' end
local module = MODULES[ARGV[2]]
if module then
  local r = module.reserve(KEYS[1], ARGV[3], ARGV[4])
  if type(r) == 'table' and r.err then return r end
else
  redis.call('SETRANGE', KEYS[1], tonumber(ARGV[3]) - 1, '\0')
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 'OK'
