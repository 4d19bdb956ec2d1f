-- claim.lua: take a group of tickets out of the pool for one match, fenced and
-- all-or-nothing.
--
-- The fence check comes first so that an owner whose lease was taken over
-- cannot change anything, not even a partial read-modify-write; the membership
-- check comes before any removal so that a cancel (or another claim) that won
-- one ticket leaves the whole group in place.
--
-- KEYS[1]      fence key (INTEGER, the partition lease's fencing counter)
-- KEYS[2]      pool ZSET
-- KEYS[3]      enq ZSET
-- KEYS[4]      due ZSET
-- KEYS[5]      hb ZSET
-- KEYS[5+i]    ticket HASH of the i-th ticket (i = 1..N)
-- ARGV[1]      fence token; "0" skips the check (unfenced callers, tests)
-- ARGV[2]      match id, stored in each ticket hash
-- ARGV[3]      ticket hash TTL after the claim, ms (> 0)
-- ARGV[3+i]    ticket id of the i-th ticket, in the same order as KEYS[5+i]
--
-- Returns the error reply "STALE_FENCE ..." when the token is not exactly the
-- fence key's value (nothing touched); {0, missing ids...} when any ticket is
-- no longer in the pool (nothing touched); {1} when every ticket was claimed.

if ARGV[1] ~= '0' then
  local current = redis.call('GET', KEYS[1])
  if current ~= ARGV[1] then
    return redis.error_reply('STALE_FENCE fence token ' .. ARGV[1] .. ' is not current')
  end
end

local n = #KEYS - 5
local missing = {0}
for i = 1, n do
  if not redis.call('ZSCORE', KEYS[2], ARGV[3 + i]) then
    missing[#missing + 1] = ARGV[3 + i]
  end
end
if #missing > 1 then
  return missing
end

for i = 1, n do
  local id = ARGV[3 + i]
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
  redis.call('ZREM', KEYS[5], id)
  redis.call('HSET', KEYS[5 + i], 'state', 'claimed', 'match', ARGV[2])
  redis.call('PEXPIRE', KEYS[5 + i], ARGV[3])
end
return {1}
