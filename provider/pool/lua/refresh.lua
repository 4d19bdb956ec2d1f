-- refresh.lua: extend "seen until" of the providers a session holds.
--
-- The provider keys are built here from the queue's base key: the user ids
-- are the script's arguments, and every key built shares the base key's
-- hash tag, so the script still touches one slot.
--
-- A provider is refreshed when its online flag is set and its session is
-- ARGV[1] exactly; until and seen only move forward (a refresh delayed
-- behind a later one shortens nothing).
--
-- KEYS[1]  base "<prefix>:{prov:<queue>}:"; the script reads and writes
--          <base>p:<user> HASH (cap, attrs, session, until, seen, on)
-- ARGV[1]  session
-- ARGV[2]  seen until, unix ms
-- ARGV[3]  seen, unix ms: the caller's clock now
-- ARGV[4…] user ids (at most a chunk a call)
--
-- Returns the number of providers refreshed.

local n = 0
local untilMs, seen = tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 4, #ARGV do
  local key = KEYS[1] .. 'p:' .. ARGV[i]
  local f = redis.call('HMGET', key, 'on', 'session', 'until', 'seen')
  if f[1] == '1' and f[2] == ARGV[1] then
    if untilMs > tonumber(f[3]) then
      redis.call('HSET', key, 'until', ARGV[2])
    end
    if seen > tonumber(f[4]) then
      redis.call('HSET', key, 'seen', ARGV[3])
    end
    n = n + 1
  end
end
return n
