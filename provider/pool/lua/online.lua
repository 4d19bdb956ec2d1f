-- online.lua: put a provider online, replacing its capacity, attributes,
-- session and "seen until"; its held slots stay held.
--
-- KEYS[1]  all ZSET       (member user id, score 0: the providers known)
-- KEYS[2]  provider HASH  (cap, attrs, session, until, seen, on)
-- KEYS[3]  held SET       (assignment ids holding the provider's slots)
-- ARGV[1]  user id
-- ARGV[2]  capacity (>= 0, checked by the caller)
-- ARGV[3]  attributes, JSON
-- ARGV[4]  session
-- ARGV[5]  seen until, unix ms
-- ARGV[6]  seen, unix ms: the caller's clock now
--
-- Returns the provider as stored: {cap, attrs, until, seen, on, {held}}.

redis.call('ZADD', KEYS[1], 0, ARGV[1])
redis.call('HSET', KEYS[2], 'cap', ARGV[2], 'attrs', ARGV[3], 'session', ARGV[4],
  'until', ARGV[5], 'seen', ARGV[6], 'on', '1')
return {ARGV[2], ARGV[3], ARGV[5], ARGV[6], '1', redis.call('SMEMBERS', KEYS[3])}
