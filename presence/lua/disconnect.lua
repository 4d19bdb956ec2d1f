-- Record that a user's last socket on a node closed: KEYS[1] the user's
-- presence record, ARGV[1] "on <node>" of the closing node, ARGV[2] the
-- "off <unix ms>" record, ARGV[3] its life in ms. Another node's "on"
-- record stays: the user reconnected there before this node saw the old
-- socket close, and overwriting it would make them read as gone while
-- connected. Returns 1 when written, 0 when left.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] and string.sub(v, 1, 3) == 'on ' then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
