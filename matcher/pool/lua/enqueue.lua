-- enqueue.lua: add waiting tickets to a partition, idempotently.
--
-- A retry of a join must not move the player in the wait order or the skill
-- scan, so an existing ticket hash wins over the caller's values: the first
-- write's scores stay. The joins of a burst share one call: each ticket costs
-- its hash writes, and each sorted set takes every new member in one ZADD.
--
-- The pool and enq sets name a ticket by its member: the ticket id followed
-- by the fields a pass needs (see member in pool.go), so that reading them
-- is reading the entries, with no hash read per entry. The due and hb sets,
-- read a few at a time, name it by its bare id: a shorter member costs less
-- memory. The hash keeps the member, the state and the last heartbeat.
--
-- KEYS[1]    pool ZSET   (score = skill)
-- KEYS[2]    enq ZSET    (score = effective enqueue time, unix ms)
-- KEYS[3]    due ZSET    (score = deadline, unix ms)
-- KEYS[4]    hb ZSET     (score = last sign of life, unix ms: heartbeat, else
--                         the enqueue time)
-- KEYS[4+i]  ticket HASH of the i-th ticket
-- ARGV       six arguments per ticket, in KEYS order:
--   1 member (the ticket id is its first field)
--   2 skill (float, shortest round-trip decimal)
--   3 effective enqueue time, unix ms
--   4 deadline, unix ms
--   5 last heartbeat, unix ms ("0" = none yet)
--   6 ticket hash TTL, ms (> 0)
--
-- Returns, per ticket, 1 when it was added, 0 when its hash already existed
-- (the pool is left untouched for it, whatever state the hash is in; a ticket
-- listed twice is added by the first).

local out = {}
local adds = {{}, {}, {}, {}} -- per sorted set: score, member, ...
for i = 1, #KEYS - 4 do
  local a, key = (i - 1) * 6, KEYS[4 + i]
  if redis.call('EXISTS', key) == 1 then
    out[i] = 0
  else
    local m, hb = ARGV[a + 1], ARGV[a + 3]
    if ARGV[a + 5] ~= '0' then
      hb = ARGV[a + 5]
      redis.call('HSET', key, 'm', m, 'state', 'waiting', 'hb', hb)
    else
      redis.call('HSET', key, 'm', m, 'state', 'waiting')
    end
    redis.call('PEXPIRE', key, ARGV[a + 6])
    local id = m:match('^[^|]*')
    for s, score in ipairs({ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], hb}) do
      local l = adds[s]
      l[#l + 1], l[#l + 2] = score, s <= 2 and m or id
    end
    out[i] = 1
  end
end

-- Redis's Lua takes a few thousand arguments to one call at most.
for s = 1, 4 do
  local l = adds[s]
  for lo = 1, #l, 2000 do
    redis.call('ZADD', KEYS[s], unpack(l, lo, math.min(lo + 1999, #l)))
  end
end
return out
