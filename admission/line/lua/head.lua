-- head.lua: the first n waiters, in order, with their seq.
--
-- KEYS[1]  line ZSET (member user id, score seq)
-- ARGV[1]  n (at least 1)
--
-- Returns flat: user id, seq, ...

local head = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 2, #head, 2 do
  head[i] = string.format('%d', tonumber(head[i]))
end
return head
