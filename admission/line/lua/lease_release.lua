-- lease_release.lua: give the admitter lease up so another admitter takes
-- over at once.
--
-- No clock is read: a lease of this owner and token that has expired and
-- that nobody took since is deleted as well, which frees it just the same.
--
-- KEYS[1]  lease STRING ("<owner> <token> <expiry, unix ms>")
-- ARGV[1]  owner id
-- ARGV[2]  the owner's token
--
-- Returns 1 when released, 0 when the lease was not (or no longer) ours.

local v = redis.call('GET', KEYS[1])
if not v or v:match('^(.*) %d+$') ~= ARGV[1] .. ' ' .. ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
