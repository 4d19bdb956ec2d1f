-- offer.lua: offer waiting players of one partition to a neighbouring one.
--
-- The home partition of a player who has waited long enough writes an offer
-- into each adjacent region's partition: a copy of the player's entry that
-- the neighbour may consider as a candidate, and nothing more. The player
-- stays in the home pool, with the home deadline and ghost check; the offer
-- is repeated on every home pass with a short expiry, so a lost offer costs
-- a pass and a stale one lapses by itself. Taking an offered player is a
-- separate claim on the home pool (see the matcher's offers.go). This script
-- touches the neighbour's keys only (one hash tag).
--
-- KEYS[1]      offers ZSET of the neighbour partition (score = expiry, ms)
-- KEYS[1+i]    offer HASH of the i-th ticket (i = 1..N), in the neighbour
-- ARGV[1]      now, unix ms: offers that expired by then are dropped
-- ARGV[2]      expiry of the offers written, unix ms
-- ARGV[3]      offer hash TTL, ms (> 0): a few seconds past the expiry, a
--              safety net that frees the memory (the score decides)
-- ARGV[4+4(i-1)+0..3]  the i-th ticket: id, member (its entry, as the
--              pool names it), heartbeat ms ("0" = none), home partition name
--
-- Returns the number of offers written.

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
local n = #KEYS - 1
for i = 1, n do
  local a = 4 + 4 * (i - 1)
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[a])
  redis.call('HSET', KEYS[1 + i], 'm', ARGV[a + 1], 'hb', ARGV[a + 2], 'home', ARGV[a + 3])
  redis.call('PEXPIRE', KEYS[1 + i], ARGV[3])
end
return n
