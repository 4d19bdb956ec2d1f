-- idle.lua: up to limit waiters last seen before an instant, oldest first
-- (ties by user id, as a sorted set orders them).
--
-- The seen set holds exactly the users in the line, so no waiter in
-- processing or gone is ever returned.
--
-- KEYS[1]  seen ZSET (member user id, score last seen, unix ms)
-- ARGV[1]  before, unix ms, by the caller's clock (exclusive)
-- ARGV[2]  limit (at least 1)
--
-- Returns the user ids.

return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
