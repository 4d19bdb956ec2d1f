-- touch.lua: those of the users waiting in the line were seen at now.
--
-- The seen set holds exactly the users in the line, so one ZADD XX GT does
-- it all: a user not in the line (never entered, left, in processing,
-- admitted) is not in the set and is not added (XX), so presence never
-- puts anyone back; a seen instant only moves forward (GT, Redis 6.2), so
-- a caller whose clock is a little behind another's does not make a
-- waiter look absent for longer.
--
-- KEYS[1]  seen ZSET (member user id, score last seen, unix ms)
-- ARGV[1]  now, unix ms, by the caller's clock
-- ARGV[2..] user ids (at most a chunk: 2 arguments each, well within
--           Lua's stack)
--
-- Returns the number of instants moved.

if #ARGV < 2 then
  return 0
end
local args = {'XX', 'GT', 'CH'}
for i = 2, #ARGV do
  args[#args + 1] = ARGV[1]
  args[#args + 1] = ARGV[i]
end
return redis.call('ZADD', KEYS[1], unpack(args))
