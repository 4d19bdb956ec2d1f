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
-- member (for those who know only the ticket id), the state and the last
-- heartbeat.
--
-- KEYS[1]    pool ZSET   (score = skill)
-- KEYS[2]    enq ZSET    (score = effective enqueue time, unix ms)
-- KEYS[3]    watch ZSET  (score = when the ticket next needs a look, unix
--                         ms: the sooner of its deadline and its last sign
--                         of life plus the queue's heartbeat timeout)
-- KEYS[3+i]  ticket HASH of the i-th ticket
-- ARGV       six arguments per ticket, in KEYS order:
--   1 member (the ticket id is its first field)
--   2 skill (float, shortest round-trip decimal)
--   3 effective enqueue time, unix ms
--   4 watch score, unix ms
--   5 last heartbeat, unix ms ("0" = none yet)
--   6 ticket hash TTL, ms (> 0)
--
-- Returns, per ticket, 1 when it was added, 0 when its hash already existed
-- (the pool is left untouched for it, whatever state the hash is in; a ticket
-- listed twice is added by the first).

local out = {}
local adds = {{}, {}, {}} -- per sorted set: score, member, ...
for i = 1, #KEYS - 3 do
  local a, key = (i - 1) * 6, KEYS[3 + i]
  if redis.call('EXISTS', key) == 1 then
    out[i] = 0
  else
    local m = ARGV[a + 1]
    if ARGV[a + 5] ~= '0' then
      redis.call('HSET', key, 'm', m, 'state', 'waiting', 'hb', ARGV[a + 5])
    else
      redis.call('HSET', key, 'm', m, 'state', 'waiting')
    end
    redis.call('PEXPIRE', key, ARGV[a + 6])
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
