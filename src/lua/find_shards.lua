-- rotabloom find-shards, protocol 1: one SCAN step on the node that serves
-- KEYS[1], a key that is never read or written: it only routes the call,
-- so that in a Redis Cluster each master is walked in turn (a plain SCAN
-- carries no key and reaches one node chosen by the client).
-- ARGV: SCAN cursor, MATCH pattern, COUNT.
-- Returns {next cursor, keys}.
return redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
