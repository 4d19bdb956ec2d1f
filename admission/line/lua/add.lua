-- add.lua: put places into the line at their seq, each unless present.
--
-- A user already in the line keeps the place it has (ZADD NX); a user in
-- processing is not put back, whatever the seq (the admitter holds it, and
-- its Ack or the sweep's Return decides); a place acknowledged within the
-- last while (the admitted set, by seq) is not put back either: the record
-- read that a rebuild adds from may predate its admission.
--
-- Presence: a place added is seen at now, and so is a user already in the
-- line who has no seen instant (a line written before presence existed);
-- one who has keeps it, so a rebuild never resets anyone's absence, and a
-- rebuild after a loss of Redis starts everyone's absence at the rebuild
-- rather than abandoning them for the time the line was gone.
--
-- KEYS[1]  line ZSET       (member user id, score seq)
-- KEYS[2]  processing HASH (user id -> "<seq> <taken at> [<seen>]", unix ms)
-- KEYS[3]  admitted ZSET   (member seq, score taken at, unix ms)
-- KEYS[4]  seen ZSET       (member user id, score last seen, unix ms)
-- ARGV[1]  now, unix ms, by the caller's clock
-- ARGV[2..] pairs: seq (decimal integer), user id
--
-- Returns the number of places added.

local added = 0
for i = 2, #ARGV, 2 do
  local seq, user = ARGV[i], ARGV[i + 1]
  if redis.call('HEXISTS', KEYS[2], user) == 0
      and not redis.call('ZSCORE', KEYS[3], seq) then
    if redis.call('ZADD', KEYS[1], 'NX', seq, user) == 1 then
      redis.call('ZADD', KEYS[4], ARGV[1], user)
      added = added + 1
    else
      redis.call('ZADD', KEYS[4], 'NX', ARGV[1], user)
    end
  end
end
return added
