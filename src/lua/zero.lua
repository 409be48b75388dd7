-- rotabloom zero, protocol 1: empties one block of a filter being cleared,
-- one block per call so that other clients' commands run between them. A
-- block of a generation rotabloom made stays allocated at its full size (a
-- missing one would be lost data); an adopted legacy block is only deleted.
-- KEYS[1]: metadata hash; KEYS[2]: the block. ARGV: uid, epoch, cleared,
-- then bytes, or a module's tag ('bf'), error rate, capacity (a module's
-- generation, reserved again empty), or '' (deleted only).
-- Returns 'OK', or 'STALE' (the filter changed: nothing done).
if not current(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return 'STALE' end
redis.call('UNLINK', KEYS[2])
local module = MODULES[ARGV[4]]
if module then
  local r = module.reserve(KEYS[2], ARGV[5], ARGV[6])
  if type(r) == 'table' and r.err then return r end
elseif ARGV[4] ~= '' then
  redis.call('SETRANGE', KEYS[2], tonumber(ARGV[4]) - 1, '\0')
end
return 'OK'
