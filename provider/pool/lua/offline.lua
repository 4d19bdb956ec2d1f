-- offline.lua: take a provider offline, if the session named holds it.
--
-- The online flag must be set and the session be '' (any) or the one that
-- put the provider online; otherwise nothing changes. A provider whose
-- "seen until" has passed but whose flag is still set is taken offline too
-- (and the call answers 1), so that a late refresh cannot bring it back.
-- Held slots stay held. Seen becomes now if the provider was fresh at now;
-- a lapsed one keeps its last refresh.
--
-- KEYS[1]  provider HASH  (cap, attrs, session, until, seen, on)
-- ARGV[1]  session, or '' for any
-- ARGV[2]  now, unix ms, by the caller's clock
--
-- Returns 1 when it took the provider offline, else 0.

local f = redis.call('HMGET', KEYS[1], 'on', 'session', 'until')
if f[1] ~= '1' or (ARGV[1] ~= '' and f[2] ~= ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'on', '0')
if tonumber(f[3]) > tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'seen', ARGV[2])
end
return 1
