-- heartbeat.lua: record that a waiting player is still there.
--
-- Heartbeats are the largest write flow and live only here; a claimed or
-- unknown ticket must not be revived by a late heartbeat, hence the state
-- check instead of a blind HSET (which would also create a hash without TTL).
-- A sharded queue's ticket is in its sub-pool or in the overflow pool: the
-- caller names the pool and watch ZSETs of each, and only the watch of the
-- pool holding the ticket is written (another may keep the member a claim
-- left there, which must reach the head and be dropped). A member missing
-- from that watch (a layout before it, or a partial loss) is added back.
--
-- The watch score is rewritten even when the heartbeat is not later than
-- the last one: the queue's timeout may have changed since it was written,
-- and a pass that read the ticket too early must be able to put it back in
-- its place.
--
-- KEYS[1]     ticket HASH
-- KEYS[2..]   pool and watch ZSETs of every pool the ticket may be in, in
--             pairs (same hash tag)
-- ARGV[1]     heartbeat time, unix ms
-- ARGV[2]     the queue's heartbeat timeout, ms ("0" = none)
-- ARGV[3]     now, unix ms, by the pool's clock: a hash whose end ("exp",
--             see enqueue.lua) is at or before it is gone
--
-- Returns 1 when the ticket is waiting (hb is now the later of its old value
-- and ARGV[1]), 0 when it is claimed or unknown.

-- ended(state, match, exp, now) is ended.lua's, loaded before this script.

local f = redis.call('HMGET', KEYS[1], 'state', 'hb', 'm', 'exp', 'match')
if f[1] ~= 'waiting' or ended(f[1], f[5], f[4], tonumber(ARGV[3])) then
  return 0
end
local last = tonumber(f[2] or '0') or 0
if tonumber(ARGV[1]) > last then
  last = tonumber(ARGV[1])
  redis.call('HSET', KEYS[1], 'hb', ARGV[1])
end
-- The member's fourth field is the deadline: "<id>|<skill>|<enq>|<deadline>|...".
local m = f[3]
local dl = m and tonumber(m:match('^[^|]*|[^|]*|[^|]*|([^|]*)'))
if dl then
  local watch, timeout = dl, tonumber(ARGV[2])
  if timeout > 0 and last + timeout < watch then
    watch = last + timeout
  end
  for i = 2, #KEYS, 2 do
    if redis.call('ZSCORE', KEYS[i], m) then
      redis.call('ZADD', KEYS[i + 1], watch, m)
    end
  end
end
return 1
