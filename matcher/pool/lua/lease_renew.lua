-- lease_renew.lua: extend a lease, only for the owner holding the current
-- token.
--
-- KEYS[1]  lease key
-- KEYS[2]  fence key
-- ARGV[1]  owner id
-- ARGV[2]  the owner's token
-- ARGV[3]  lease TTL, ms
--
-- Returns 1 when renewed; 0 when the lease expired, belongs to another owner
-- or the token is no longer current (the caller must stop at once).

if redis.call('GET', KEYS[1]) ~= ARGV[1] .. ' ' .. ARGV[2] then
  return 0
end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
