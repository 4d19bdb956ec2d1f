-- heartbeat.lua: record that a waiting player is still there.
--
-- Heartbeats are the largest write flow and live only here; a claimed or
-- unknown ticket must not be revived by a late heartbeat, hence the state
-- check instead of a blind HSET (which would also create a hash without TTL).
-- A sharded queue's ticket is in its sub-pool or in the overflow pool: the
-- caller names the hb ZSET of each, and only the one holding the ticket is
-- updated (ZADD XX never adds a member).
--
-- KEYS[1]     ticket HASH
-- KEYS[2..]   hb ZSET of every pool the ticket may be in (same hash tag)
-- ARGV[1]     heartbeat time, unix ms
-- ARGV[2]     ticket id (the hb set's member)
--
-- Returns 1 when the ticket is waiting (hb is now the later of its old value
-- and ARGV[1]), 0 when it is claimed or unknown.

local f = redis.call('HMGET', KEYS[1], 'state', 'hb')
if f[1] ~= 'waiting' then
  return 0
end
local prev = tonumber(f[2] or '0') or 0
if tonumber(ARGV[1]) > prev then
  redis.call('HSET', KEYS[1], 'hb', ARGV[1])
  for i = 2, #KEYS do
    redis.call('ZADD', KEYS[i], 'XX', ARGV[1], ARGV[2])
  end
end
return 1
