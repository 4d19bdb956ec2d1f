-- snapshot.lua: every provider of a queue, read together.
--
-- The provider keys are built here from the queue's base key, from the
-- user ids the all set holds: every key built shares the base key's hash
-- tag, so the script still touches one slot.
--
-- KEYS[1]  base "<prefix>:{prov:<queue>}:"; the script reads
--          <base>all ZSET (member user id, score 0: ZRANGE lists by user id),
--          <base>p:<user> HASH (cap, attrs, session, until, seen, on) and
--          <base>held:<user> SET (assignment ids)
--
-- Returns one row per provider known, by user id:
-- {user, cap, attrs, until, seen, on, {held}}; the caller judges online at
-- its now.

local out = {}
for _, user in ipairs(redis.call('ZRANGE', KEYS[1] .. 'all', 0, -1)) do
  local f = redis.call('HMGET', KEYS[1] .. 'p:' .. user, 'cap', 'attrs', 'until', 'seen', 'on')
  if f[1] then
    out[#out + 1] = {user, f[1], f[2] or '{}', f[3] or '0', f[4] or '0', f[5] or '0',
      redis.call('SMEMBERS', KEYS[1] .. 'held:' .. user)}
  end
end
return out
