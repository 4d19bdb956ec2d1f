-- renew.lua: extend a lease, only for the owner holding the current
-- token, and only while the lease has not expired by the caller's clock.
--
-- A lease past its stored expiry is lost even though Redis still has the
-- key (its expiry is a safety net, later): another matcher may take it at
-- any moment, and its owner must stop rather than extend it. A value of the
-- format before the expiry was stored ("<owner> <token>") is valid until
-- Redis expires it and is rewritten in the current format.
--
-- KEYS[1]  lease key (STRING: "<owner> <token> <expiry, unix ms>")
-- KEYS[2]  fence key
-- ARGV[1]  owner id
-- ARGV[2]  the owner's token
-- ARGV[3]  now, unix ms, by the caller's clock
-- ARGV[4]  the lease's new expiry, unix ms: now + the lease TTL
-- ARGV[5]  the key's expiry, ms (longer than the TTL): a safety net
--
-- Returns 1 when renewed; 0 when the lease expired, belongs to another owner
-- or the token is no longer current (the caller must stop at once).

local v = redis.call('GET', KEYS[1])
if not v then
  return 0
end
local held = ARGV[1] .. ' ' .. ARGV[2]
if v ~= held then
  local who, expiry = v:match('^(.*) (%d+)$')
  if who ~= held or tonumber(expiry) <= tonumber(ARGV[3]) then
    return 0
  end
end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], held .. ' ' .. ARGV[4], 'PX', ARGV[5])
return 1
