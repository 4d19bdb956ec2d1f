-- update.lua: change the capacity and/or attributes of an online provider.
--
-- Online means the online flag is set and "seen until" is after now. A
-- capacity below the slots held is stored as is: Hold takes no new slot
-- until enough are released, and none is taken away.
--
-- KEYS[1]  provider HASH  (cap, attrs, session, until, seen, on)
-- KEYS[2]  held SET       (assignment ids)
-- ARGV[1]  now, unix ms, by the caller's clock
-- ARGV[2]  capacity, or '' to keep it
-- ARGV[3]  attributes JSON, or '' to keep them
--
-- Returns {} when the provider is not online (nothing changed), else the
-- provider as stored: {cap, attrs, until, seen, on, {held}}.

local f = redis.call('HMGET', KEYS[1], 'on', 'until')
if f[1] ~= '1' or tonumber(f[2]) <= tonumber(ARGV[1]) then
  return {}
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'cap', ARGV[2])
end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'attrs', ARGV[3])
end
local g = redis.call('HMGET', KEYS[1], 'cap', 'attrs', 'until', 'seen', 'on')
return {g[1], g[2], g[3], g[4], g[5], redis.call('SMEMBERS', KEYS[2])}
