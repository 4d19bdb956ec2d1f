-- lease_acquire.lua: take a partition's lease if nobody holds it, and issue
-- the next fencing token.
--
-- The token must exceed every token ever issued for the partition, including
-- those recorded in PostgreSQL before a Redis wipe reset the counter: the
-- caller passes the record's epoch as a floor.
--
-- KEYS[1]  lease key (STRING: "<owner> <token>", expiring)
-- KEYS[2]  fence key (INTEGER: the last token issued)
-- ARGV[1]  owner id
-- ARGV[2]  lease TTL, ms
-- ARGV[3]  floor: the token must be greater than this
--
-- Returns the new token, or 0 when another owner holds the lease.

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local token = redis.call('INCR', KEYS[2])
local floor = tonumber(ARGV[3])
if token <= floor then
  token = floor + 1
  redis.call('SET', KEYS[2], token)
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. token, 'PX', ARGV[2])
return token
