-- ranks.lua: the ranks of some users, the line's length and the passed
-- counter, read together.
--
-- KEYS[1]  line ZSET       (member user id, score seq)
-- KEYS[2]  passed INTEGER  (waiters taken from the front, less those returned)
-- ARGV     user ids (at most a chunk, so that no call holds Redis long)
--
-- Returns {passed, length, rank, rank, ...}; a rank is -1 for a user not in
-- the line.

local out = {tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('ZCARD', KEYS[1])}
for i = 1, #ARGV do
  out[#out + 1] = redis.call('ZRANK', KEYS[1], ARGV[i]) or -1
end
return out
