-- remove.lua: take users out of the line (they left, or were abandoned).
--
-- A user in processing stays there: the admitter's record refuses to admit
-- a place that is no longer waiting, and its Ack clears it.
--
-- KEYS[1]  line ZSET (member user id, score seq)
-- ARGV     user ids
--
-- Returns the number removed.

local removed = 0
for i = 1, #ARGV do
  removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
end
return removed
