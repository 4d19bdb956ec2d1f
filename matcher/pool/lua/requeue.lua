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
-- Guarded (G > 0), it is the requeue of a ticket that may have been put
-- back, promoted or claimed elsewhere meanwhile (a sharded queue's sub-pool
-- reconciled while its overflow pool runs): a ticket whose member is in one
-- of the G sibling pools, or whose hash says claimed from a pool other than
-- this one, is left alone, so that no ticket is ever in two pools.
--
-- For the reconciler (ARGV[7] = "1"), a ticket claimed from this pool is
-- put back only when its claim is dead: made under a fence token below the
-- pool's current one (its owner lost the lease; the record refuses its
-- commit). A live owner's claim is its own to commit or put back.
--
-- A hash whose end ("exp", see enqueue.lua) is at or before now is read as
-- gone, and deleted before the ticket is put back: a claim's mark past its
-- end guards nothing, and a waiting hash past it is the pool's loss.
--
-- KEYS[1]      pool ZSET
-- KEYS[2]      enq ZSET
-- KEYS[3]      watch ZSET
-- KEYS[3+i]    ticket HASH of the i-th ticket (i = 1..N)
-- KEYS[3+N+g]  pool ZSET of the g-th sibling pool (g = 1..G)
-- KEYS[#KEYS]  with ARGV[7] = "1": this pool's fence key
-- ARGV[1]      now, unix ms, by the pool's clock
-- ARGV[2]      the hash's end, unix ms: now + its TTL
-- ARGV[3]      the key's expiry, ms (longer than the TTL): a safety net
-- ARGV[4]      the heartbeat, ms, of a ticket whose hash is gone ("0" = its
--              own): one the pool lost while it was out of it (Redis lost
--              its keys) lost its heartbeats too, and its player's presence
--              record with them, and is given a full timeout from the
--              caller's clock to be seen again, as the reconciler gives what
--              it re-adds
-- ARGV[5]      the queue's heartbeat timeout, ms ("0" = none): the watch
--              score is the sooner of the deadline and the last sign of life
--              plus it
-- ARGV[6]      G, the number of sibling pools guarded against ("0" = none)
-- ARGV[7]      "1": dead claims only (the reconciler), else "0"
-- ARGV[8+7(i-1)+0..6]  the i-th ticket: id, member, skill, effective enqueue
--              ms, deadline ms, heartbeat ms ("0" = none), display name (""
--              for one the caller does not know: the hash's stays)
--
-- Returns the number of members added to the pool: tickets that were not in
-- it, and those whose member changed. A ticket already waiting under the
-- same member gets its original scores rewritten and is not counted; one
-- the guard left alone is not counted either.

-- ended(state, match, exp, now) is ended.lua's, loaded before this script.

local added = 0
local now = tonumber(ARGV[1])
local lost = tonumber(ARGV[4])
local timeout = tonumber(ARGV[5])
local g = tonumber(ARGV[6])
local deadOnly = ARGV[7] == '1'
local fence = 0
local n = #KEYS - 3 - g
if deadOnly then
  n = n - 1
  fence = tonumber(redis.call('GET', KEYS[#KEYS]) or '0')
end

-- elsewhere reports whether the guard keeps the ticket out of this pool.
local function elsewhere(id, m, f)
  if f[3] == 'claimed' then
    if f[4] and f[4] ~= KEYS[1] and (g > 0 or deadOnly) then
      return true
    end
    if deadOnly and tonumber(f[5] or '0') >= fence then
      return true
    end
  end
  for s = 1, g do
    local key = KEYS[3 + n + s]
    for _, x in ipairs({m, f[1] or m, id}) do
      if redis.call('ZSCORE', key, x) then
        return true
      end
    end
  end
  return false
end

-- put requeues one ticket; it returns 1 when its member was not in the pool.
local function put(id, m, skill, enq, dl, hb, name, h, f)
  if lost > tonumber(hb) and not f[1] then
    hb = ARGV[4]
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
  redis.call('HSET', h, 'm', m, 'state', 'waiting', 'exp', ARGV[2])
  if name ~= '' then
    redis.call('HSET', h, 'name', name)
  end
  redis.call('HDEL', h, 'match', 'from', 'fence')
  redis.call('PEXPIRE', h, ARGV[3])

  local watch = tonumber(dl)
  if timeout > 0 and prev + timeout < watch then
    watch = prev + timeout
  end
  local new = redis.call('ZADD', KEYS[1], skill, m)
  redis.call('ZADD', KEYS[2], enq, m)
  redis.call('ZADD', KEYS[3], watch, m)
  return new
end

for i = 1, n do
  local a = 8 + 7 * (i - 1)
  local id, m, skill, enq, dl, hb, name = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  local h = KEYS[3 + i]
  local f = redis.call('HMGET', h, 'm', 'hb', 'state', 'from', 'fence', 'exp', 'match')
  if ended(f[3], f[7], f[6], now) then
    redis.call('DEL', h)
    f = {}
  end
  if not elsewhere(id, m, f) then
    added = added + put(id, m, skill, enq, dl, hb, name, h, f)
  end
end
return added
