-- rewatch.lua: put pool members missing from the watch set back into it.
--
-- The reconciler's repair for a pool written by a layout before the watch
-- set (whose deadlines and heartbeats were in two other sets) or partly
-- lost: a member missing from watch is never looked at by its deadline or
-- its heartbeat. The pool check is in the script so that a member claimed
-- since the caller read the pool, which is no longer in it, stays out; a
-- member already in watch keeps its score (a heartbeat may have moved it).
--
-- KEYS[1]   pool ZSET
-- KEYS[2]   watch ZSET (same hash tag)
-- ARGV      pairs: watch score (unix ms), member
--
-- Returns how many members were added to watch.

local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i + 1]) then
    n = n + redis.call('ZADD', KEYS[2], 'NX', ARGV[i], ARGV[i + 1])
  end
end
return n
