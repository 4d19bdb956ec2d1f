-- scan.lua: read pool entries with their ticket fields, for several scans of
-- one partition in one call. Read-only.
--
-- The members are only known once the ZSET has been read, so the ticket hashes
-- cannot be passed in KEYS like in the other scripts: KEYS[5] is instead the
-- common prefix of the ticket hash keys. Every hash read is KEYS[5] .. id,
-- which carries the partition's hash tag, so the script still touches a single
-- Redis Cluster slot.
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
--            "nearest"  the n members of pool closest in skill to p1, and
--                       any as close as the farthest of them (ties at the
--                       edge); the caller orders them. p2, when not "",
--                       is the anchor's own ticket id: when it is in pool
--                       with skill p1 the read is centred on its place, so
--                       that anchors of one skill get the players next to
--                       each of them instead of the same few
--            "stale"    members of hb with score <= p1 (cutoff ms: no sign of
--                       life since then), oldest first, at most n
--            "anchors"  as "oldest" and, when it read n members, for each of
--                       them what "nearest" reads with p1 = its skill and
--                       p2 = its id, at most p1 (> 0) of them: a matching
--                       pass's anchors with their candidates, in the round
--                       trip that reads the anchors rather than one more.
--                       With fewer than n members the pass holds the whole
--                       pool and reads no candidates.
--
-- Returns one reply per scan, each a flat array of 8 strings per entry:
--   id, user, skill, enq ms, deadline ms, estimated, activity, heartbeat ms
-- except for "anchors": an array of the anchors' flat array and then one flat
-- array per anchor, its candidates (none when it read fewer than n).
-- Missing values are "". The score of the scanned set comes with the range;
-- the other two are read from the hash, which holds copies written by the same
-- scripts, so an entry costs one HMGET (a few ZSCOREs more per entry made a
-- 100-entry window ~40% slower), and an entry several scans of the call read
-- costs one. A member whose hash has vanished is still returned, with an
-- empty user and its scores read from the sets, for the caller to repair.

-- rows reads one scan's members with their scores, and which field of an
-- entry that score is.
local function rows(mode, n, p1, p2)
  if mode == 'oldest' then
    return redis.call('ZRANGE', KEYS[2], 0, n - 1, 'WITHSCORES'), 3
  elseif mode == 'due' then
    return redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', p1, 'WITHSCORES', 'LIMIT', 0, n), 4
  elseif mode == 'window' then
    return redis.call('ZRANGEBYSCORE', KEYS[1], p1, p2, 'WITHSCORES', 'LIMIT', 0, n), 2
  elseif mode == 'nearest' then
    -- Rank of the first member above skill; the n ranks below it are <= skill.
    -- Among equal skills the members are in id order, and every anchor of
    -- that skill would read the same n at the end of the run: centred on
    -- the anchor instead, c is the rank just after it (everything before
    -- it is <= skill, everything after it >= skill).
    local c
    if p2 ~= '' then
      local own = redis.call('ZSCORE', KEYS[1], p2)
      if own and tonumber(own) == tonumber(p1) then
        c = redis.call('ZRANK', KEYS[1], p2) + 1
      end
    end
    if not c then
      c = redis.call('ZCOUNT', KEYS[1], '-inf', p1)
    end
    local start = c - n
    if start < 0 then start = 0 end
    local r = redis.call('ZRANGE', KEYS[1], start, c + n - 1, 'WITHSCORES')
    -- Of the n on each side keep the n closest, and any tied with the n-th
    -- (the caller breaks ties by wait order): every entry kept costs a hash
    -- read, and the far half is never wanted. lo walks down from the last
    -- entry <= skill, hi up from the first above it (entry indices, 1-based).
    local s, m = tonumber(p1), #r / 2
    local lo, hi, cut = c - start, c - start + 1, nil
    for _ = 1, n do
      local dl = lo >= 1 and s - tonumber(r[2 * lo]) or math.huge
      local dh = hi <= m and tonumber(r[2 * hi]) - s or math.huge
      if dl == math.huge and dh == math.huge then break end
      if dl <= dh then cut, lo = dl, lo - 1 else cut, hi = dh, hi + 1 end
    end
    if cut then
      while lo >= 1 and s - tonumber(r[2 * lo]) <= cut do lo = lo - 1 end
      while hi <= m and tonumber(r[2 * hi]) - s <= cut do hi = hi + 1 end
    end
    local out = {}
    for i = lo + 1, hi - 1 do
      out[#out + 1], out[#out + 2] = r[2 * i - 1], r[2 * i]
    end
    return out, 2
  elseif mode == 'stale' then
    -- f[7] is the heartbeat: the hb score is the last sign of life, also for
    -- a ticket that never heartbeated (its enqueue time).
    return redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', p1, 'WITHSCORES', 'LIMIT', 0, n), 7
  end
  return nil
end

-- The hash fields of the entries read so far in this call.
local fields = {}

-- entries turns a scan's members and scores into its flat reply.
local function entries(rs, primary)
  local out, o = {}, 0
  for i = 1, #rs, 2 do
    local id = rs[i]
    -- f[2], f[3], f[4] are skill, enq, dl: the same positions as KEYS[1..3]
    -- + 1; f[7] is hb, the score of KEYS[4].
    local f = fields[id]
    if not f then
      f = redis.call('HMGET', KEYS[5] .. id, 'user', 'skill', 'enq', 'dl', 'est', 'act', 'hb')
      fields[id] = f
    end
    out[o + 1] = id
    for k = 1, 7 do
      out[o + 1 + k] = f[k] or ''
    end
    out[o + 1 + primary] = rs[i + 1]
    -- est is always written, so its absence means the hash is gone.
    if not f[5] then
      for k = 2, 4 do
        if k ~= primary then out[o + 1 + k] = redis.call('ZSCORE', KEYS[k - 1], id) or '' end
      end
    end
    o = o + 8
  end
  return out
end

local replies = {}
for a = 1, #ARGV, 4 do
  local mode, n = ARGV[a], tonumber(ARGV[a + 1])
  if mode == 'anchors' then
    local anchors = entries(rows('oldest', n))
    local reply = {anchors}
    if #anchors == 8 * n then
      local limit = tonumber(ARGV[a + 2])
      for o = 0, #anchors - 8, 8 do
        -- An anchor whose hash is gone is not matched (the caller repairs
        -- it), and one gone from the pool has no skill to centre on.
        local near = {}
        if anchors[o + 2] ~= '' and anchors[o + 3] ~= '' then
          near = entries(rows('nearest', limit, anchors[o + 3], anchors[o + 1]))
        end
        reply[#reply + 1] = near
      end
    end
    replies[#replies + 1] = reply
  else
    local rs, primary = rows(mode, n, ARGV[a + 2], ARGV[a + 3])
    if not rs then
      return redis.error_reply('ERR scan: unknown mode ' .. tostring(mode))
    end
    replies[#replies + 1] = entries(rs, primary)
  end
end
return replies
