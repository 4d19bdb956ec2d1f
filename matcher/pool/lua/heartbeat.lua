-- heartbeat.lua: record that a waiting player is still there.
--
-- Heartbeats are the largest write flow and live only here; a claimed or
-- unknown ticket must not be revived by a late heartbeat, hence the state
-- check instead of a blind HSET (which would also create a hash without TTL).
--
-- KEYS[1]  ticket HASH
-- KEYS[2]  hb ZSET
-- ARGV[1]  ticket id
-- ARGV[2]  heartbeat time, unix ms
--
-- Returns 1 when the ticket is waiting (hb is now the later of its old value
-- and ARGV[1]), 0 when it is claimed or unknown.

if redis.call('HGET', KEYS[1], 'state') ~= 'waiting' then
  return 0
end
local prev = tonumber(redis.call('HGET', KEYS[1], 'hb') or '0') or 0
if tonumber(ARGV[2]) > prev then
  redis.call('HSET', KEYS[1], 'hb', ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
end
return 1
