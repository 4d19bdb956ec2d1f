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
-- KEYS[1]      fence key (INTEGER, the partition lease's fencing counter)
-- KEYS[2]      pool ZSET
-- KEYS[3]      enq ZSET
-- KEYS[4]      due ZSET
-- KEYS[5]      hb ZSET
-- KEYS[5+j]    ticket HASH of the j-th ticket listed, over all groups in order
-- ARGV[1]      fence token; "0" skips the check (unfenced callers, tests)
-- ARGV[2]      ticket hash TTL after the claim, ms (> 0)
-- ARGV[3..]    the groups, each as: match id, ticket count n, then its n
--              tickets' members (in the same order as their KEYS)
--
-- Returns the error reply "STALE_FENCE ..." when the token is not exactly the
-- fence key's value (nothing touched); else one reply per group: {0, missing
-- members...} when any of its tickets is no longer in the pool (that group
-- untouched), {1} when every ticket of it was claimed.

if ARGV[1] ~= '0' then
  local current = redis.call('GET', KEYS[1])
  if current ~= ARGV[1] then
    return redis.error_reply('STALE_FENCE fence token ' .. ARGV[1] .. ' is not current')
  end
end

-- The groups: where each starts in ARGV, its size, and its first KEYS index.
local groups, members = {}, {}
local a, k = 3, 6
while a <= #ARGV do
  local n = tonumber(ARGV[a + 1])
  groups[#groups + 1] = {a, n, k}
  for i = 1, n do
    members[#members + 1] = ARGV[a + 1 + i]
  end
  a, k = a + 2 + n, k + n
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

local score = chunked('ZMSCORE', KEYS[2], members)
local present, taken = {}, {}
for j, m in ipairs(members) do
  if score[j] then
    present[m] = true
  end
end

local replies, claimed, hashes = {}, {}, {}
for g, grp in ipairs(groups) do
  local a, n, k = grp[1], grp[2], grp[3]
  local missing = {0}
  for i = 1, n do
    local m = ARGV[a + 1 + i]
    if not present[m] or taken[m] then
      missing[#missing + 1] = m
    end
  end
  if #missing > 1 then
    replies[g] = missing
  else
    for i = 1, n do
      local m = ARGV[a + 1 + i]
      taken[m] = true
      claimed[#claimed + 1] = m
      hashes[#hashes + 1] = {KEYS[k + i - 1], ARGV[a]}
    end
    replies[g] = {1}
  end
end

if #claimed > 0 then
  for s = 2, 5 do
    chunked('ZREM', KEYS[s], claimed)
  end
  for _, h in ipairs(hashes) do
    redis.call('HSET', h[1], 'state', 'claimed', 'match', h[2])
    redis.call('PEXPIRE', h[1], ARGV[2])
  end
end
return replies
