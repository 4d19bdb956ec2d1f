-- requeue.lua: put claimed tickets back with their original scores.
--
-- Used when the durable commit (or the allocation) of a claimed match fails:
-- the players must return exactly where they were in the wait order and the
-- skill scan, not at the back of the queue. Unlike enqueue it overwrites an
-- existing hash, because the hash of a claimed ticket is exactly what is being
-- undone. It is also the reconciler's repair for a WAITING ticket missing from
-- the pool.
--
-- A ticket has one member at a time in the sets: one the hash names that
-- differs from the caller's (fields read elsewhere), and the bare ticket id
-- (a member written before members carried the entry's fields), are removed
-- from them first. The claim left the member in watch; the ZADD rewrites its
-- score.
--
-- KEYS[1]      pool ZSET
-- KEYS[2]      enq ZSET
-- KEYS[3]      watch ZSET
-- KEYS[3+i]    ticket HASH of the i-th ticket (i = 1..N)
-- ARGV[1]      ticket hash TTL, ms (> 0)
-- ARGV[2]      the heartbeat, ms, of a ticket whose hash is gone ("0" = its
--              own): one the pool lost while it was out of it (Redis lost
--              its keys) lost its heartbeats too, and its player's presence
--              record with them, and is given a full timeout from the
--              caller's clock to be seen again, as the reconciler gives what
--              it re-adds
-- ARGV[3]      the queue's heartbeat timeout, ms ("0" = none): the watch
--              score is the sooner of the deadline and the last sign of life
--              plus it
-- ARGV[4+6(i-1)+0..5]  the i-th ticket: id, member, skill, effective enqueue
--              ms, deadline ms, heartbeat ms ("0" = none)
--
-- Returns the number of members added to the pool: tickets that were not in
-- it, and those whose member changed. A ticket already waiting under the
-- same member gets its original scores rewritten and is not counted.

local added = 0
local lost = tonumber(ARGV[2])
local timeout = tonumber(ARGV[3])
local n = #KEYS - 3
for i = 1, n do
  local a = 4 + 6 * (i - 1)
  local id, m, skill, enq, dl, hb = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  local h = KEYS[3 + i]
  local f = redis.call('HMGET', h, 'm', 'hb')
  if lost > tonumber(hb) and not f[1] then
    hb = ARGV[2]
  end
  for _, old in ipairs({f[1] or m, id}) do
    if old ~= m then
      for s = 1, 3 do
        redis.call('ZREM', KEYS[s], old)
      end
    end
  end

  -- A heartbeat may have landed after the caller read the ticket: never move
  -- it backwards.
  local prev = tonumber(f[2] or '0') or 0
  if tonumber(hb) > prev then
    prev = tonumber(hb)
    redis.call('HSET', h, 'hb', hb)
  end
  if prev == 0 then prev = tonumber(enq) end
  redis.call('HSET', h, 'm', m, 'state', 'waiting')
  redis.call('HDEL', h, 'match')
  redis.call('PEXPIRE', h, ARGV[1])

  local watch = tonumber(dl)
  if timeout > 0 and prev + timeout < watch then
    watch = prev + timeout
  end
  added = added + redis.call('ZADD', KEYS[1], skill, m)
  redis.call('ZADD', KEYS[2], enq, m)
  redis.call('ZADD', KEYS[3], watch, m)
end
return added
