-- promote.lua: move the long waiters of a sub-pool into the overflow pool.
--
-- A hot queue is split into sub-pools by user id; a player who has waited
-- past the threshold is promoted into the one overflow pool of the region,
-- where everyone who waited long is matched together. The move must never
-- leave a player in two pools or in none, so it is one script; and it must
-- keep the player's place, so every score is read before the ZREM destroys
-- it and written unchanged. The ticket hash is shared by all the pools of a
-- region and stays as it is. Both pools share one hash tag.
--
-- KEYS[1..4]  pool, enq, due and hb ZSETs of the sub-pool (from)
-- KEYS[5..8]  pool, enq, due and hb ZSETs of the overflow pool (to)
-- ARGV[1]     cutoff: members whose effective enqueue time (enq score) is
--             at or before it move, unix ms
-- ARGV[2]     at most this many move (> 0)
--
-- Returns the members moved, oldest first.

local members = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local moved = {}
for _, m in ipairs(members) do
  local skill = redis.call('ZSCORE', KEYS[1], m)
  -- An enq member without a pool member is a stray the reconciler removes;
  -- it is not a waiting player and does not move.
  if skill then
    local scores = {skill}
    for j = 2, 4 do
      scores[j] = redis.call('ZSCORE', KEYS[j], m)
    end
    for j = 1, 4 do
      redis.call('ZREM', KEYS[j], m)
      if scores[j] then
        redis.call('ZADD', KEYS[4 + j], scores[j], m)
      end
    end
    moved[#moved + 1] = m
  end
end
return moved
