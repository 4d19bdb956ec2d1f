-- ack.lua: the admitter has admitted these users: out of processing.
--
-- Each acknowledged place is remembered in the admitted set, by seq and the
-- instant it was taken, so that a rebuild's late Add does not put it back
-- (take.lua forgets it after a while). The seen instant that processing
-- kept for a return is dropped with it.
--
-- KEYS[1]  processing HASH (user id -> "<seq> <taken at> [<seen>]", unix ms)
-- KEYS[2]  admitted ZSET   (member seq, score taken at)
-- ARGV[1]  the admitted set's expiry, ms: a safety net
-- ARGV[2..] user ids
--
-- Returns the number of users taken out of processing.

local acked = 0
for i = 2, #ARGV do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  if v then
    local seq, at = v:match('^(%S+) (%S+)')
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('ZADD', KEYS[2], at, seq)
    acked = acked + 1
  end
end
if acked > 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return acked
