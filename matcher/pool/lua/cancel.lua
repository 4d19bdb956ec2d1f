-- cancel.lua: remove one waiting ticket, and say who won when it is gone.
--
-- A cancel and a claim race for the same ticket; exactly one of them finds it
-- in the pool. The loser of a cancel needs the match id to answer the player
-- (409 ALREADY_MATCHED), which is why a claim keeps the hash, marked, for a
-- while.
--
-- Every set names the ticket by its member, which the hash keeps. The
-- caller may name a member too: one rebuilt from the record, or read from
-- the pool by the reconciler, removes the entry even when the hash is gone.
-- A member that differs from the pool's (rebuilt elsewhere) removes
-- nothing: the pass that meets the pool's restores it from the record.
--
-- A sharded queue's ticket is in its own sub-pool or in the overflow pool
-- (promote.lua moves it), and both share the ticket hash: the caller names
-- every pool the ticket may be in, so that finding it and removing it is one
-- atomic step wherever it is. All of them share one hash tag.
--
-- A hash whose end ("exp", see enqueue.lua) is at or before now is read as
-- gone: a claim's mark past its end no longer answers who won.
--
-- KEYS[3(k-1)+1..3k]  pool, enq and watch ZSETs of the k-th pool (k = 1..G)
-- KEYS[3G+1]          ticket HASH
-- ARGV[1]             the caller's member for the ticket, or ""
-- ARGV[2]             now, unix ms, by the pool's clock
--
-- Returns {1} when the ticket was in one of the pools and is now removed
-- (hash deleted); otherwise {0, state, match} read from the hash: state
-- "claimed" and the match id when a claim won, or "" for both when the ticket
-- is unknown. A leftover hash that is not claimed (its members already gone)
-- is deleted too, so a cancelled ticket leaves nothing behind.

-- ended(state, match, exp, now) is ended.lua's, loaded before this script.

local g = (#KEYS - 1) / 3
local h = KEYS[#KEYS]
local f = redis.call('HMGET', h, 'm', 'state', 'match', 'exp')
if ended(f[2], f[3], f[4], tonumber(ARGV[2])) then
  f = {}
end
local members = {}
if f[1] then members[1] = f[1] end
if ARGV[1] ~= '' and ARGV[1] ~= f[1] then members[#members + 1] = ARGV[1] end

for _, m in ipairs(members) do
  for k = 0, g - 1 do
    if redis.call('ZSCORE', KEYS[3 * k + 1], m) then
      for s = 1, 3 do
        redis.call('ZREM', KEYS[3 * k + s], m)
      end
      redis.call('DEL', h)
      return {1}
    end
  end
end

local state, match = f[2] or '', f[3] or ''
if state ~= 'claimed' then
  -- Strays in enq or watch without a pool member would otherwise be
  -- scanned until a pass drops them.
  for k = 0, g - 1 do
    for _, m in ipairs(members) do
      redis.call('ZREM', KEYS[3 * k + 2], m)
      redis.call('ZREM', KEYS[3 * k + 3], m)
    end
  end
  redis.call('DEL', h)
  return {0, '', ''}
end
return {0, state, match}
