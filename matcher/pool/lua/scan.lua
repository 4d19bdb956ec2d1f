-- scan.lua: read pool entries, for several scans of one partition in one
-- call. Read-only.
--
-- The pool and enq sets' members carry the entries' fields (see member in
-- pool.go), so a scan of them is its range reads and nothing more: no hash
-- read per entry, no copy of the entries in Lua. The due and hb sets name
-- a ticket by its bare id (a shorter member, less memory): a scan of them,
-- which reads a few at a time, reads each one's member from its hash.
-- Those hashes are only known once the set has been read, so KEYS[5] is
-- their common prefix; every key read carries the partition's hash tag.
--
-- KEYS[1]  pool ZSET
-- KEYS[2]  enq ZSET
-- KEYS[3]  due ZSET
-- KEYS[4]  hb ZSET
-- KEYS[5]  ticket HASH key prefix ("<prefix>:{<partition>}:t:")
-- ARGV     the scans, four arguments each: mode, n (> 0), and two mode
--          parameters ("" when unused). Modes:
--            "oldest"   first n members of enq by rank (wait order)
--            "due"      members of due with score <= p1 (now ms), soonest
--                       first, at most n
--            "window"   members of pool with p1 <= skill <= p2, ascending
--                       skill, at most n
--            "nearest"  the n members of pool on each side of skill p1,
--                       which hold the n closest to it: the caller picks
--                       them. p2, when not "", is the anchor's own member:
--                       when it is in pool at skill p1 the read is centred
--                       on its place, so that anchors of one skill get the
--                       players next to each of them instead of the same
--                       few
--            "stale"    members of hb with score <= p1 (cutoff ms: no sign of
--                       life since then), oldest first, at most n
--            "anchors"  as "oldest" and, when it read n members, for each of
--                       them what "nearest" reads with p1 = its skill and
--                       p2 = its member, at most p1 (> 0) of them: a
--                       matching pass's anchors with their candidates, in
--                       the round trip that reads the anchors rather than
--                       one more. With fewer than n members the pass holds
--                       the whole pool and reads no candidates.
--
-- Returns one reply per scan, each an array of members, except for
-- "stale": member, heartbeat pairs; and for "anchors": an array of the
-- anchors' members and then one array of members per anchor, its
-- candidates (none when it read fewer than n, or when the anchor is no
-- longer in pool). A due or stale ticket whose hash is gone is returned as
-- its bare id, for the caller to restore.

-- A member's skill is its second field: "<id>|<skill>|...".
local function skillOf(m)
  return m:match('^[^|]*|([^|]*)')
end

-- around reads the n members of pool on each side of rank c (everything
-- before c is <= the skill, everything from c on is >= it), which hold the
-- n closest to the skill: the caller picks those, by the skills in the
-- members.
local function around(n, c)
  local start = c - n
  if start < 0 then start = 0 end
  return redis.call('ZRANGE', KEYS[1], start, c + n - 1)
end

-- nearest reads the n members of pool closest to skill s (a string, as
-- the caller and the members write it: passed on to Redis unconverted).
-- Among equal skills the members are in id order, and every anchor of that
-- skill would read the same n at the end of the run: centred on the
-- anchor's own member instead, when it is in pool at that skill.
local function nearest(n, s, own)
  if own ~= '' and skillOf(own) == s then
    local r = redis.call('ZRANK', KEYS[1], own)
    if r then
      return around(n, r + 1)
    end
  end
  return around(n, redis.call('ZCOUNT', KEYS[1], '-inf', s))
end

-- members turns ids read from due or hb (with their scores when withScores)
-- into members.
local function members(rs, withScores)
  local step = withScores and 2 or 1
  for i = 1, #rs, step do
    rs[i] = redis.call('HGET', KEYS[5] .. rs[i], 'm') or rs[i]
  end
  return rs
end

local function rows(mode, n, p1, p2)
  if mode == 'oldest' then
    return redis.call('ZRANGE', KEYS[2], 0, n - 1)
  elseif mode == 'due' then
    return members(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', p1, 'LIMIT', 0, n), false)
  elseif mode == 'window' then
    return redis.call('ZRANGEBYSCORE', KEYS[1], p1, p2, 'LIMIT', 0, n)
  elseif mode == 'nearest' then
    return nearest(n, p1, p2)
  elseif mode == 'stale' then
    return members(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', p1, 'WITHSCORES', 'LIMIT', 0, n), true)
  end
  return nil
end

local replies = {}
for a = 1, #ARGV, 4 do
  local mode, n = ARGV[a], tonumber(ARGV[a + 1])
  if mode == 'anchors' then
    local anchors = rows('oldest', n)
    local reply = {anchors}
    if #anchors == n then
      local limit = tonumber(ARGV[a + 2])
      for o = 1, #anchors do
        -- One gone from the pool (a stray the reconciler removes) has no
        -- candidates, nor has a bare ticket id (the caller restores it).
        local m = anchors[o]
        local r = m:find('|', 1, true) and redis.call('ZRANK', KEYS[1], m)
        reply[#reply + 1] = r and around(limit, r + 1) or {}
      end
    end
    replies[#replies + 1] = reply
  else
    local rs = rows(mode, n, ARGV[a + 2], ARGV[a + 3])
    if not rs then
      return redis.error_reply('ERR scan: unknown mode ' .. tostring(mode))
    end
    replies[#replies + 1] = rs
  end
end
return replies
