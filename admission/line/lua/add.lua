-- add.lua: put places into the line at their seq, each unless present.
--
-- A user already in the line keeps the place it has (ZADD NX); a user in
-- processing is not put back, whatever the seq (the admitter holds it, and
-- its Ack or the sweep's Return decides); a place acknowledged within the
-- last while (the admitted set, by seq) is not put back either: the record
-- read that a rebuild adds from may predate its admission.
--
-- KEYS[1]  line ZSET       (member user id, score seq)
-- KEYS[2]  processing HASH (user id -> "<seq> <taken at, unix ms>")
-- KEYS[3]  admitted ZSET   (member seq, score taken at, unix ms)
-- ARGV     pairs: seq (decimal integer), user id
--
-- Returns the number of places added.

local added = 0
for i = 1, #ARGV, 2 do
  local seq, user = ARGV[i], ARGV[i + 1]
  if redis.call('HEXISTS', KEYS[2], user) == 0
      and not redis.call('ZSCORE', KEYS[3], seq) then
    added = added + redis.call('ZADD', KEYS[1], 'NX', seq, user)
  end
end
return added
