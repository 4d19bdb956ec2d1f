-- return.lua: put taken waiters back in the line at their seq.
--
-- Only a user still in processing under that very seq goes back: one
-- acknowledged meanwhile, or returned by another sweep, stays where it is.
-- A waiter back in the line is seen when it was last seen before the take
-- (processing kept the instant), or at the take when it had none; the
-- passed counter gives back what the take counted.
--
-- KEYS[1]  processing HASH (user id -> "<seq> <taken at> [<seen>]", unix ms)
-- KEYS[2]  line ZSET       (member user id, score seq)
-- KEYS[3]  seen ZSET       (member user id, score last seen, unix ms)
-- KEYS[4]  passed INTEGER  (waiters taken from the front, less those returned)
-- ARGV     pairs: user id, seq
--
-- Returns the number put back.

local back = 0
for i = 1, #ARGV, 2 do
  local user = ARGV[i]
  local v = redis.call('HGET', KEYS[1], user)
  if v then
    local seq, at, seen = v:match('^(%S+) (%S+) ?(%S*)$')
    if tonumber(seq) == tonumber(ARGV[i + 1]) then
      redis.call('HDEL', KEYS[1], user)
      if redis.call('ZADD', KEYS[2], 'NX', ARGV[i + 1], user) == 1 then
        if seen == '' then
          seen = at
        end
        redis.call('ZADD', KEYS[3], seen, user)
        back = back + 1
      end
    end
  end
end
if back > 0 then
  redis.call('DECRBY', KEYS[4], back)
end
return back
