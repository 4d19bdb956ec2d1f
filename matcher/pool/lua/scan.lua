-- scan.lua: read pool entries, for several scans of one partition in one
-- call. It writes only to drop what a claim left in watch.
--
-- The sets' members carry the entries' fields (see member in pool.go), so a
-- scan is its range reads and nothing more: no hash read per entry, no copy
-- of the entries in Lua; a watch scan, which reads a few entries a pass,
-- reads each one's heartbeat from its hash. Those hashes are only known
-- once the set has been read, so KEYS[4] is their common prefix; every key
-- read carries the partition's hash tag.
--
-- KEYS[1]  pool ZSET
-- KEYS[2]  enq ZSET
-- KEYS[3]  watch ZSET
-- KEYS[4]  ticket HASH key prefix ("<prefix>:{<partition>}:t:")
-- ARGV     the scans, four arguments each: mode, n (> 0), and two mode
--          parameters ("" when unused). Modes:
--            "oldest"   first n members of enq by rank (wait order)
--            "watch"    members of watch with score <= p1 (now ms), soonest
--                       first, at most n, with their heartbeats: those
--                       past their deadline or silent for their queue's
--                       heartbeat timeout. A member no longer in pool (a
--                       claim leaves it in watch) is dropped from watch
--                       instead: the scan reads at most n + watchDrops.
--                       p2 is now by the pool's clock (ms), which judges
--                       the hashes: one whose end ("exp", see
--                       enqueue.lua) is at or before it is gone
--            "window"   members of pool with p1 <= skill <= p2, ascending
--                       skill, at most n
--            "nearest"  the n members of pool on each side of skill p1,
--                       which hold the n closest to it: the caller picks
--                       them. p2, when not "", is the anchor's own member:
--                       when it is in pool at skill p1 the read is centred
--                       on its place, so that anchors of one skill get the
--                       players next to each of them instead of the same
--                       few
--            "anchors"  as "oldest" and, when it read n members, for each of
--                       them what "nearest" reads with p1 = its skill and
--                       p2 = its member, at most p1 (> 0) of them: a
--                       matching pass's anchors with their candidates, in
--                       the round trip that reads the anchors rather than
--                       one more. With fewer than n members the pass holds
--                       the whole pool and reads no candidates.
--
-- Returns one reply per scan, each an array of members, except for
-- "watch": member, heartbeat pairs (heartbeat "0" when none was sent); and
-- for "anchors": an array of the anchors' members and then one array of
-- members per anchor, its candidates (none when it read fewer than n, or
-- when the anchor is no longer in pool). A watched ticket whose hash is
-- gone, or names another member, is returned as its bare id, for the
-- caller to restore.

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

-- ended(state, match, exp, now) is ended.lua's, loaded before this script.

-- A claim leaves its members in watch, which come to the head within a
-- heartbeat timeout (by their deadline without one): a watch scan drops at most this many a call beyond
-- the n it returns, so that a burst of them costs a few passes a bounded
-- time each.
local watchDrops = 1000

-- watched reads the first n members of watch due by now that are still in
-- pool, each with its heartbeat, and drops those that are not. A hash
-- ended by clock (the pool's now) is read as gone.
local function watched(n, now, clock)
  local out, gone = {}, {}
  local rs = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, n + watchDrops)
  for _, m in ipairs(rs) do
    if #out == 2 * n then
      break
    end
    if redis.call('ZSCORE', KEYS[1], m) then
      local id = m:match('^[^|]*')
      local f = redis.call('HMGET', KEYS[4] .. id, 'm', 'hb', 'state', 'match', 'exp')
      if f[1] == m and not (clock and ended(f[3], f[4], f[5], clock)) then
        out[#out + 1], out[#out + 2] = m, f[2] or '0'
      else
        out[#out + 1], out[#out + 2] = id, '0'
      end
    else
      gone[#gone + 1] = m
    end
  end
  for lo = 1, #gone, 1000 do
    redis.call('ZREM', KEYS[3], unpack(gone, lo, math.min(lo + 999, #gone)))
  end
  return out
end

local function rows(mode, n, p1, p2)
  if mode == 'oldest' then
    return redis.call('ZRANGE', KEYS[2], 0, n - 1)
  elseif mode == 'watch' then
    return watched(n, p1, tonumber(p2))
  elseif mode == 'window' then
    return redis.call('ZRANGEBYSCORE', KEYS[1], p1, p2, 'LIMIT', 0, n)
  elseif mode == 'nearest' then
    return nearest(n, p1, p2)
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
