-- socket_acquire.lua: take one of a user's socket leases, unless the user
-- already holds the maximum.
--
-- A lease is a member of the user's sorted set scored with its expiry. Each
-- gateway renews the leases of its open sockets (ZADD XX) well within the
-- lease time and removes them when the sockets close; a gateway that dies
-- stops renewing, and its leases stop counting once they expire. Expired
-- members are removed here, before counting.
--
-- KEYS[1]  ZSET  the user's leases: socket id → expiry, ms since the epoch
-- ARGV[1]  the socket id (node and session, unique in the cluster)
-- ARGV[2]  the most leases the user may hold
-- ARGV[3]  now, ms since the epoch
-- ARGV[4]  the lease time, ms
--
-- Returns {acquired (1 or 0), leases held after the call}. Acquiring a lease
-- already held renews it.

local now = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local expiry = string.format('%.0f', now + ttl)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], expiry, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, redis.call('ZCARD', KEYS[1])}
end
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[2]) then
  return {0, held}
end
redis.call('ZADD', KEYS[1], expiry, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, held + 1}
