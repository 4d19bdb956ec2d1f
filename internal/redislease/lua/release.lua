-- release.lua: give a lease up so another owner takes over at once.
--
-- No clock is read: a lease of this owner and token that has expired and
-- that nobody took since is deleted as well, which frees it just the same.
--
-- KEYS[1]  lease key (STRING: "<owner> <token> <expiry, unix ms>", or
--          "<owner> <token>" as written before the expiry was stored)
-- ARGV[1]  owner id
-- ARGV[2]  the owner's token
--
-- Returns 1 when released, 0 when the lease was not (or no longer) ours.

local v = redis.call('GET', KEYS[1])
local held = ARGV[1] .. ' ' .. ARGV[2]
if not v or (v ~= held and v:match('^(.*) %d+$') ~= held) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
