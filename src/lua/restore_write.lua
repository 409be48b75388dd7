-- rotabloom restore-write, protocol 1: one write into a block of a filter
-- being restored (docs/FORMAT.md §10.3), with the block's time to live set
-- again in the same atomic step: until the publish step makes it
-- permanent, the block never exists without one, so a restore that dies
-- (SIGKILL, a lost connection) leaves nothing that outlives its lease.
-- KEYS[1]: the block. ARGV[1]: 'NEW' to allocate it (it must not exist)
-- or 'MORE' (it must exist); ARGV[2]: offset; ARGV[3]: bytes; ARGV[4]: the
-- time to live, milliseconds.
-- Returns the block's length; or 'EXISTS' (NEW, but the key exists) or
-- 'GONE' (MORE, but the key expired or was evicted): nothing written then.
-- A write to a vanished key would make it again without a time to live.
local exists = redis.call('EXISTS', KEYS[1]) == 1
if ARGV[1] == 'NEW' then
  if exists then return 'EXISTS' end
elseif not exists then
  return 'GONE'
end
local len = redis.call('SETRANGE', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return len
