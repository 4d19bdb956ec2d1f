-- return.lua: put taken waiters back in the line at their seq.
--
-- Only a user still in processing under that very seq goes back: one
-- acknowledged meanwhile, or returned by another sweep, stays where it is.
--
-- KEYS[1]  processing HASH (user id -> "<seq> <taken at, unix ms>")
-- KEYS[2]  line ZSET       (member user id, score seq)
-- ARGV     pairs: user id, seq
--
-- Returns the number put back.

local back = 0
for i = 1, #ARGV, 2 do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  if v and tonumber(v:match('^(%S+) ')) == tonumber(ARGV[i + 1]) then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('ZADD', KEYS[2], 'NX', ARGV[i + 1], ARGV[i])
    back = back + 1
  end
end
return back
