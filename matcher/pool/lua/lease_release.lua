-- lease_release.lua: give a lease up so another matcher takes over at once.
--
-- KEYS[1]  lease key
-- ARGV[1]  owner id
-- ARGV[2]  the owner's token
--
-- Returns 1 when released, 0 when the lease was not (or no longer) ours.

if redis.call('GET', KEYS[1]) ~= ARGV[1] .. ' ' .. ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
