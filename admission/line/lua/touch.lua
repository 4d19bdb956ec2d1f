-- touch.lua: those of the users waiting in the line were seen at now.
--
-- A user not in the line (never entered, left, in processing, admitted) is
-- ignored: presence never puts anyone back. A seen instant only moves
-- forward, so a caller whose clock is a little behind another's does not
-- make a waiter look absent for longer.
--
-- KEYS[1]  line ZSET (member user id, score seq)
-- KEYS[2]  seen ZSET (member user id, score last seen, unix ms)
-- ARGV[1]  now, unix ms, by the caller's clock
-- ARGV[2..] user ids
--
-- Returns the number of users in the line among them.

local now = tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    local seen = redis.call('ZSCORE', KEYS[2], ARGV[i])
    if not seen or tonumber(seen) < now then
      redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
    end
    n = n + 1
  end
end
return n
