-- size.lua: the number of waiters in the line.
--
-- KEYS[1]  line ZSET (member user id, score seq)

return redis.call('ZCARD', KEYS[1])
