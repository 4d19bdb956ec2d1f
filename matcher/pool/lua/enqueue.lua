-- enqueue.lua: add waiting tickets to a partition, idempotently.
--
-- A retry of a join must not move the player in the wait order or the skill
-- scan, so an existing ticket hash wins over the caller's values: the first
-- write's scores stay. The joins of a burst share one call: each ticket costs
-- its hash writes, and each sorted set takes every new member in one ZADD.
--
-- Every set names a ticket by its member: the ticket id followed by the
-- fields a pass needs (see member in pool.go), so that reading them is
-- reading the entries, with no hash read per entry. The hash keeps the
-- member (for those who know only the ticket id), the state, the last
-- heartbeat, its end, and the player's display name ("name", absent for
-- none: kept out of the member, which every pass parses, it is read back
-- by the claim alone).
--
-- A hash lives until its end, "exp", by the pool's clock (the clock of the
-- matcher's decisions): "<unix ms>" for a waiting ticket (written here and
-- by requeue.lua), "<unix ms> <match id>" for a claim's mark (claim.lua).
-- A hash whose end is at or before the caller's now is gone, though Redis
-- still has it, and is written anew; the key's own expiry, a little later,
-- only frees the memory. An end that does not fit the hash's present state
-- (none, or one a script of the previous version left when it claimed or
-- put back the ticket) is ignored: Redis's expiry ends that hash, as it did
-- then.
--
-- KEYS[1]    pool ZSET   (score = skill)
-- KEYS[2]    enq ZSET    (score = effective enqueue time, unix ms)
-- KEYS[3]    watch ZSET  (score = when the ticket next needs a look, unix
--                         ms: the sooner of its deadline and its last sign
--                         of life plus the queue's heartbeat timeout)
-- KEYS[3+i]  ticket HASH of the i-th ticket
-- ARGV       nine arguments per ticket, in KEYS order:
--   1 member (the ticket id is its first field)
--   2 skill (float, shortest round-trip decimal)
--   3 effective enqueue time, unix ms
--   4 watch score, unix ms
--   5 last heartbeat, unix ms ("0" = none yet)
--   6 now, unix ms
--   7 the hash's end, unix ms (now + its TTL)
--   8 the key's expiry, ms (longer than the TTL): a safety net
--   9 the display name ("" for none)
--
-- Returns, per ticket, 1 when it was added, 0 when its hash already existed
-- and had not ended (the pool is left untouched for it, whatever state the
-- hash is in; a ticket listed twice is added by the first).

-- ended(state, match, exp, now) is ended.lua's, loaded before this script.

local out = {}
local adds = {{}, {}, {}} -- per sorted set: score, member, ...
for i = 1, #KEYS - 3 do
  local a, key = (i - 1) * 9, KEYS[3 + i]
  local f = redis.call('HMGET', key, 'state', 'match', 'exp')
  if f[1] and not ended(f[1], f[2], f[3], tonumber(ARGV[a + 6])) then
    out[i] = 0
  else
    local m = ARGV[a + 1]
    if f[1] then
      redis.call('DEL', key)
    end
    if ARGV[a + 5] ~= '0' then
      redis.call('HSET', key, 'm', m, 'state', 'waiting', 'hb', ARGV[a + 5], 'exp', ARGV[a + 7])
    else
      redis.call('HSET', key, 'm', m, 'state', 'waiting', 'exp', ARGV[a + 7])
    end
    if ARGV[a + 9] ~= '' then
      redis.call('HSET', key, 'name', ARGV[a + 9])
    end
    redis.call('PEXPIRE', key, ARGV[a + 8])
    for s = 1, 3 do
      local l = adds[s]
      l[#l + 1], l[#l + 2] = ARGV[a + 1 + s], m
    end
    out[i] = 1
  end
end

-- Redis's Lua takes a few thousand arguments to one call at most.
for s = 1, 3 do
  local l = adds[s]
  for lo = 1, #l, 2000 do
    redis.call('ZADD', KEYS[s], unpack(l, lo, math.min(lo + 1999, #l)))
  end
end
return out
