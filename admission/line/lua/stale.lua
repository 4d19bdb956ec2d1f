-- stale.lua: the waiters in processing taken before an instant.
--
-- Processing holds at most what the admitter took and did not acknowledge
-- yet, a few seconds of the rate, so it is read whole.
--
-- KEYS[1]  processing HASH (user id -> "<seq> <taken at> [<seen>]", unix ms)
-- ARGV[1]  before, unix ms, by the caller's clock
--
-- Returns flat: user id, seq, taken at, ...

local out = {}
local all = redis.call('HGETALL', KEYS[1])
local before = tonumber(ARGV[1])
for i = 1, #all, 2 do
  local seq, at = all[i + 1]:match('^(%S+) (%S+)')
  if tonumber(at) < before then
    out[#out + 1] = all[i]
    out[#out + 1] = seq
    out[#out + 1] = at
  end
end
return out
