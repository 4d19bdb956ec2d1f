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
-- KEYS[1..3]  pool, enq and watch ZSETs of the sub-pool (from)
-- KEYS[4..6]  pool, enq and watch ZSETs of the overflow pool (to)
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
    for j = 1, 3 do
      local score = j == 1 and skill or redis.call('ZSCORE', KEYS[j], m)
      redis.call('ZREM', KEYS[j], m)
      if score then
        redis.call('ZADD', KEYS[3 + j], score, m)
      end
    end
    moved[#moved + 1] = m
  end
end
return moved
