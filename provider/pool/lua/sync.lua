-- sync.lua: set a provider's held slots to exactly the ids given (rebuilt
-- from the record), creating an offline provider of capacity 0 when the
-- pool does not know it.
--
-- KEYS[1]  all ZSET       (member user id, score 0)
-- KEYS[2]  provider HASH  (cap, attrs, session, until, seen, on)
-- KEYS[3]  held SET       (assignment ids)
-- ARGV[1]  user id
-- ARGV[2]  attributes JSON of a new provider (the empty attributes)
-- ARGV[3…] assignment ids
--
-- Returns the number of slots held after the sync.

redis.call('ZADD', KEYS[1], 0, ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[2], 'cap', '0', 'attrs', ARGV[2], 'session', '',
    'until', '0', 'seen', '0', 'on', '0')
end
redis.call('DEL', KEYS[3])
-- 1000 ids a SADD, well within Lua's stack.
local ids = {}
for i = 3, #ARGV do
  ids[#ids + 1] = ARGV[i]
  if #ids == 1000 or i == #ARGV then
    redis.call('SADD', KEYS[3], unpack(ids))
    ids = {}
  end
end
return redis.call('SCARD', KEYS[3])
