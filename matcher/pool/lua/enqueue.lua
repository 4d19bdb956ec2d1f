-- enqueue.lua: add one waiting ticket to a partition, idempotently.
--
-- A retry of a join must not move the player in the wait order or the skill
-- scan, so an existing ticket hash wins over the caller's values: the first
-- write's scores stay.
--
-- KEYS[1]  pool ZSET   (score = skill)
-- KEYS[2]  enq ZSET    (score = effective enqueue time, unix ms)
-- KEYS[3]  due ZSET    (score = deadline, unix ms)
-- KEYS[4]  hb ZSET     (score = last sign of life, unix ms: heartbeat, else
--                       the enqueue time)
-- KEYS[5]  ticket HASH
-- ARGV[1]  ticket id (the member name in the three ZSETs)
-- ARGV[2]  user id
-- ARGV[3]  skill (float, shortest round-trip decimal)
-- ARGV[4]  activity (float)
-- ARGV[5]  estimated skill: "1" or "0"
-- ARGV[6]  effective enqueue time, unix ms
-- ARGV[7]  deadline, unix ms
-- ARGV[8]  last heartbeat, unix ms ("0" = none yet)
-- ARGV[9]  ticket hash TTL, ms (> 0)
--
-- Returns 1 when the ticket was added, 0 when its hash already existed (the
-- pool is left untouched, whatever state the hash is in).

if redis.call('EXISTS', KEYS[5]) == 1 then
  return 0
end

local id = ARGV[1]
redis.call('HSET', KEYS[5],
  'user', ARGV[2],
  'skill', ARGV[3],
  'act', ARGV[4],
  'est', ARGV[5],
  'enq', ARGV[6],
  'dl', ARGV[7],
  'state', 'waiting')
local hb = ARGV[6]
if ARGV[8] ~= '0' then
  redis.call('HSET', KEYS[5], 'hb', ARGV[8])
  hb = ARGV[8]
end
redis.call('PEXPIRE', KEYS[5], ARGV[9])
redis.call('ZADD', KEYS[4], hb, id)
redis.call('ZADD', KEYS[1], ARGV[3], id)
redis.call('ZADD', KEYS[2], ARGV[6], id)
redis.call('ZADD', KEYS[3], ARGV[7], id)
return 1
