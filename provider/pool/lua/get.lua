-- get.lua: one provider as stored.
--
-- KEYS[1]  provider HASH  (cap, attrs, session, until, seen, on)
-- KEYS[2]  held SET       (assignment ids)
--
-- Returns {} when the pool does not know the provider, else
-- {cap, attrs, until, seen, on, {held}}; the caller judges online at its now.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
local f = redis.call('HMGET', KEYS[1], 'cap', 'attrs', 'until', 'seen', 'on')
return {f[1] or '0', f[2] or '{}', f[3] or '0', f[4] or '0', f[5] or '0', redis.call('SMEMBERS', KEYS[2])}
