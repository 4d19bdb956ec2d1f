-- cancel.lua: remove one waiting ticket, and say who won when it is gone.
--
-- A cancel and a claim race for the same ticket; exactly one of them finds it
-- in the pool. The loser of a cancel needs the match id to answer the player
-- (409 ALREADY_MATCHED), which is why a claim keeps the hash, marked, for a
-- while.
--
-- A sharded queue's ticket is in its own sub-pool or in the overflow pool
-- (promote.lua moves it), and both share the ticket hash: the caller names
-- every pool the ticket may be in, so that finding it and removing it is one
-- atomic step wherever it is. All of them share one hash tag.
--
-- KEYS[4(k-1)+1..4k]  pool, enq, due and hb ZSETs of the k-th pool (k = 1..G)
-- KEYS[4G+1]          ticket HASH
-- ARGV[1]             ticket id
--
-- Returns {1} when the ticket was in one of the pools and is now removed
-- (hash deleted); otherwise {0, state, match} read from the hash: state
-- "claimed" and the match id when a claim won, or "" for both when the ticket
-- is unknown. A leftover hash that is not claimed (its members already gone)
-- is deleted too, so a cancelled ticket leaves nothing behind.

local id = ARGV[1]
local g = (#KEYS - 1) / 4
local h = KEYS[#KEYS]
for k = 0, g - 1 do
  if redis.call('ZSCORE', KEYS[4 * k + 1], id) then
    for j = 1, 4 do
      redis.call('ZREM', KEYS[4 * k + j], id)
    end
    redis.call('DEL', h)
    return {1}
  end
end

local state = redis.call('HGET', h, 'state') or ''
local match = redis.call('HGET', h, 'match') or ''
if state ~= 'claimed' then
  -- Strays in enq/due/hb without a pool member would otherwise be scanned
  -- forever.
  for k = 0, g - 1 do
    for j = 2, 4 do
      redis.call('ZREM', KEYS[4 * k + j], id)
    end
  end
  redis.call('DEL', h)
  return {0, '', ''}
end
return {0, state, match}
