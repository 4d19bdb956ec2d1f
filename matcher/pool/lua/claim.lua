-- claim.lua: take groups of tickets out of the pool, each group for one match,
-- fenced, each group all-or-nothing.
--
-- The fence check comes first so that an owner whose lease was taken over
-- cannot change anything, not even a partial read-modify-write; every group's
-- membership check comes before any removal so that a cancel (or another
-- claim) that won one ticket leaves that whole group in place. Groups are
-- decided in order: a ticket listed by two groups goes to the first.
--
-- One call claims a whole round of a pass: each set is read once (ZMSCORE)
-- and written once (ZREM of every claimed ticket), so a group costs its
-- tickets' hash writes and little else.
--
-- The watch set keeps a claimed ticket's member: a removal from a sorted
-- set of a million costs a few microseconds of cache misses, and most of a
-- claim's time went on them. The member comes to the head of watch within
-- a heartbeat timeout (by its deadline without one), where the scan that reads it (scan.lua, "watch")
-- finds it out of the pool and drops it, at the cost of a removal from the
-- head. A ticket requeued meanwhile gets its score back by ZADD.
--
-- The claim's mark lives until its end, "exp" ("<unix ms> <match id>" by
-- the pool's clock, see enqueue.lua), which the claim writes over whatever
-- the hash held: the scripts that read the mark judge it by their own now.
-- The key's expiry, a little later, only frees the memory.
--
-- KEYS[1]      fence key (INTEGER, the partition lease's fencing counter)
-- KEYS[2]      pool ZSET
-- KEYS[3]      enq ZSET
-- KEYS[4]      watch ZSET (not written)
-- KEYS[4+j]    ticket HASH of the j-th ticket listed, over all groups in order;
--              a claimed one names its match, the pool it was claimed
--              from (its pool ZSET key) and the fence token it was claimed
--              under, which the reconciler's requeue reads
-- ARGV[1]      fence token; "0" skips the check (unfenced callers, tests)
-- ARGV[2]      the mark's end, unix ms: now + the claim TTL
-- ARGV[3]      the key's expiry after the claim, ms (longer than the claim
--              TTL): a safety net
-- ARGV[4..]    the groups, each as: match id, ticket count n, then its n
--              tickets' members (in the same order as their KEYS)
--
-- Returns the error reply "STALE_FENCE ..." when the token is not exactly the
-- fence key's value (nothing touched); else one reply per group: {0, missing
-- members...} when any of its tickets is no longer in the pool (that group
-- untouched), {1, names...} when every ticket of it was claimed: the display
-- name each ticket's hash holds ("" for none), in the group's order.

if ARGV[1] ~= '0' then
  local current = redis.call('GET', KEYS[1])
  if current ~= ARGV[1] then
    return redis.error_reply('STALE_FENCE fence token ' .. ARGV[1] .. ' is not current')
  end
end

-- The groups: where each starts in ARGV. Every member listed, in order.
local groups, members = {}, {}
local a = 4
while a <= #ARGV do
  groups[#groups + 1] = a
  for i = 1, tonumber(ARGV[a + 1]) do
    members[#members + 1] = ARGV[a + 1 + i]
  end
  a = a + 2 + tonumber(ARGV[a + 1])
end
if #members == 0 then
  return {}
end

-- Redis's Lua takes a few thousand arguments to one call at most.
local function chunked(cmd, key, list)
  local out = {}
  for lo = 1, #list, 1000 do
    local part = redis.call(cmd, key, unpack(list, lo, math.min(lo + 999, #list)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do
        out[#out + 1] = v
      end
    end
  end
  return out
end

-- free[m]: in the pool and not yet taken by an earlier group.
local score = chunked('ZMSCORE', KEYS[2], members)
local free = {}
for j, m in ipairs(members) do
  if score[j] then
    free[m] = true
  end
end

-- Each group in order: j counts the members before it, which are also the
-- KEYS before its hashes (after the first four).
local replies, claimed, j = {}, {}, 0
for g, a in ipairs(groups) do
  local n = tonumber(ARGV[a + 1])
  local missing
  for i = j + 1, j + n do
    if not free[members[i]] then
      missing = missing or {0}
      missing[#missing + 1] = members[i]
    end
  end
  if missing then
    replies[g] = missing
  else
    local reply = {1}
    for i = j + 1, j + n do
      free[members[i]] = nil
      claimed[#claimed + 1] = members[i]
      redis.call('HSET', KEYS[4 + i], 'state', 'claimed', 'match', ARGV[a], 'from', KEYS[2], 'fence', ARGV[1], 'exp', ARGV[2] .. ' ' .. ARGV[a])
      redis.call('PEXPIRE', KEYS[4 + i], ARGV[3])
      reply[#reply + 1] = redis.call('HGET', KEYS[4 + i], 'name') or ''
    end
    replies[g] = reply
  end
  j = j + n
end

if #claimed > 0 then
  chunked('ZREM', KEYS[2], claimed)
  chunked('ZREM', KEYS[3], claimed)
end
return replies
