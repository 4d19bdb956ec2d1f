-- remove.lua: take users out of the line (they left, or were abandoned),
-- and their presence with them.
--
-- A user in processing stays there: the admitter's record refuses to admit
-- a place that is no longer waiting, and its Ack clears it.
--
-- KEYS[1]  line ZSET (member user id, score seq)
-- KEYS[2]  seen ZSET (member user id, score last seen, unix ms)
-- ARGV     user ids
--
-- Returns the number removed.

local removed = 0
for i = 1, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZREM', KEYS[2], ARGV[i])
    removed = removed + 1
  end
end
return removed
