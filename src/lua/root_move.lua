-- rotabloom root move (docs/FORMAT.md §11.4): moves a root of creation
-- ARGV[1] from state ARGV[2] (any state when empty) to ARGV[3] (deletes it
-- when empty). KEYS[1]: the root; ARGV[4]: its format. 1 if it did, else 0.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash'
  or redis.call('HGET', KEYS[1], 'format') ~= ARGV[4]
  or redis.call('HGET', KEYS[1], 'uid') ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'state') ~= ARGV[2] then
  return 0
end
if ARGV[3] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'state', ARGV[3])
  redis.call('HDEL', KEYS[1], 'deadline')
end
return 1
