-- queue_put.lua: store a queue override with the next version, atomically,
-- so that the highest version never precedes an entry it should cover.
--
-- KEYS[1]  HASH    queue name → entry (JSON, built by the caller with a
--                  version placeholder)
-- KEYS[2]  STRING  the version counter
-- ARGV[1]  the queue name
-- ARGV[2]  the entry's JSON text up to its version number
-- ARGV[3]  the rest of the entry's JSON text after the version number
--
-- Returns the new version.

local v = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. v .. ARGV[3])
return v
