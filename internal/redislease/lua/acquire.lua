-- acquire.lua: take a lease (a partition's or an admitter's) if nobody holds it, and issue
-- the next fencing token.
--
-- Whether the lease is held is decided by the caller's clock: the value
-- holds the instant it expires, written by the clock of the owner that took
-- or renewed it, and the lease is free once that instant is at or before
-- the caller's now, whether or not Redis has let the key go yet. The key's
-- own expiry, a little later, only frees the memory. A value of the format
-- before the expiry was stored ("<owner> <token>") is held until Redis
-- expires it, as it was then.
--
-- The token must exceed every token ever issued for the partition, including
-- those recorded in PostgreSQL before a Redis wipe reset the counter: the
-- caller passes the record's epoch as a floor. A takeover of a lease that
-- expired is an acquisition like any other: the counter moves on, so the
-- previous owner's token is refused from then on.
--
-- KEYS[1]  lease key (STRING: "<owner> <token> <expiry, unix ms>")
-- KEYS[2]  fence key (INTEGER: the last token issued)
-- ARGV[1]  owner id
-- ARGV[2]  now, unix ms, by the caller's clock
-- ARGV[3]  the lease's expiry, unix ms: now + the lease TTL
-- ARGV[4]  the key's expiry, ms (longer than the TTL): a safety net
-- ARGV[5]  floor: the token must be greater than this
--
-- Returns the new token, or 0 when another owner holds the lease.

local v = redis.call('GET', KEYS[1])
if v then
  local expiry = tonumber(v:match(' %d+ (%d+)$') or '')
  if not expiry or expiry > tonumber(ARGV[2]) then
    return 0
  end
end
local token = redis.call('INCR', KEYS[2])
local floor = tonumber(ARGV[5])
if token <= floor then
  token = floor + 1
  redis.call('SET', KEYS[2], token)
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. token .. ' ' .. ARGV[3], 'PX', ARGV[4])
return token
