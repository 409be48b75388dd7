-- rotabloom drop-unreadable, protocol 1: removes the metadata and fence of
-- a filter whose metadata cannot be read (a corrupt field, another format
-- version), so that the sweep can take the rest of its keys: the way out
-- of damage that every other operation refuses.
-- KEYS[1]: metadata hash; KEYS[2]: fence. ARGV[1]: the uid as the caller
-- read it (raw), so that a filter created again since is left alone.
-- Returns 'OK', 'GONE' or 'STALE'.
if redis.call('EXISTS', KEYS[1]) == 0 then return 'GONE' end
if redis.call('HGET', KEYS[1], 'uid') ~= ARGV[1] then return 'STALE' end
redis.call('UNLINK', KEYS[1], KEYS[2])
return 'OK'
