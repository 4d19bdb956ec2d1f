-- hold.lua: take one of a provider's slots for an assignment.
--
-- An assignment already held answers 1 whatever the provider's state (a
-- retry never counts twice). Otherwise the provider must be known, online
-- (flag set, "seen until" after now) and hold fewer than its capacity.
--
-- KEYS[1]  provider HASH  (cap, attrs, session, until, seen, on)
-- KEYS[2]  held SET       (assignment ids)
-- ARGV[1]  assignment id
-- ARGV[2]  now, unix ms, by the caller's clock
--
-- Returns 1 when the assignment holds a slot, 0 when refused.

if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return 1
end
local f = redis.call('HMGET', KEYS[1], 'on', 'until', 'cap')
if f[1] ~= '1' or tonumber(f[2]) <= tonumber(ARGV[2]) then
  return 0
end
if redis.call('SCARD', KEYS[2]) >= tonumber(f[3]) then
  return 0
end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
