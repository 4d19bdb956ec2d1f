-- rank.lua: how many wait ahead of a user, and the line's length, read
-- together.
--
-- KEYS[1]  line ZSET (member user id, score seq)
-- ARGV[1]  user id
--
-- Returns {rank, length}; rank is -1 when the user is not in the line.

local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
if not rank then
  rank = -1
end
return {rank, redis.call('ZCARD', KEYS[1])}
