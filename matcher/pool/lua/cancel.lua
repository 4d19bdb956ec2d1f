-- cancel.lua: remove one waiting ticket, and say who won when it is gone.
--
-- A cancel and a claim race for the same ticket; exactly one of them finds it
-- in the pool. The loser of a cancel needs the match id to answer the player
-- (409 ALREADY_MATCHED), which is why a claim keeps the hash, marked, for a
-- while.
--
-- KEYS[1]  pool ZSET
-- KEYS[2]  enq ZSET
-- KEYS[3]  due ZSET
-- KEYS[4]  hb ZSET
-- KEYS[5]  ticket HASH
-- ARGV[1]  ticket id
--
-- Returns {1} when the ticket was in the pool and is now removed (hash deleted);
-- otherwise {0, state, match} read from the hash: state "claimed" and the match
-- id when a claim won, or "" for both when the ticket is unknown. A leftover
-- hash that is not claimed (its members already gone) is deleted too, so a
-- cancelled ticket leaves nothing behind.

local id = ARGV[1]
if redis.call('ZSCORE', KEYS[1], id) then
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
  redis.call('DEL', KEYS[5])
  return {1}
end

local state = redis.call('HGET', KEYS[5], 'state') or ''
local match = redis.call('HGET', KEYS[5], 'match') or ''
if state ~= 'claimed' then
  -- Strays in enq/due without a pool member would otherwise be scanned forever.
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
  redis.call('DEL', KEYS[5])
  return {0, '', ''}
end
return {0, state, match}
