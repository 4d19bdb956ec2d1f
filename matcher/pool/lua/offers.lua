-- offers.lua: read the live offers a partition has received. Read-only.
--
-- Like scan.lua, the offer hashes are only known once the ZSET is read, so
-- KEYS[2] is their common prefix; every key read carries the partition's
-- hash tag.
--
-- KEYS[1]  offers ZSET (score = expiry, unix ms)
-- KEYS[2]  offer HASH key prefix ("<prefix>:{<partition>}:o:")
-- ARGV[1]  now, unix ms, by the caller's clock: offers expiring before it
--          are not returned (the score decides, not Redis's clock)
-- ARGV[2]  n (> 0): at most this many, soonest expiry first
--
-- Returns a flat array, 3 strings per offer: its member (the entry, as the
-- home pool names it), heartbeat ms ("0" = none), home partition. An offer
-- whose hash is gone is skipped: the hash outlives its offer's expiry by
-- a few seconds (offer.lua), so only a caller whose clock is that far
-- behind Redis's, or a Redis that lost keys, meets one.

local rows = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(rows) do
  local f = redis.call('HMGET', KEYS[2] .. id, 'm', 'hb', 'home')
  if f[1] and f[3] then
    out[#out + 1], out[#out + 2], out[#out + 3] = f[1], f[2] or '', f[3]
  end
end
return out
