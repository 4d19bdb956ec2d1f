-- take.lua: move up to n of the first waiters into processing, fenced by the
-- lease, admitting at most rate in any one second by the callers' clocks.
--
-- The fence check comes first, before anything is read or written: the
-- token must be the one the lease holds, the lease unexpired at the
-- caller's now, and the fencing counter not moved on. A refusal is the
-- error reply "FENCED ...".
--
-- The window holds one member per take that admitted anyone,
-- "<number>:<admitted>", scored by its instant (the caller's now, unix ms);
-- the number, from a counter, keeps two takes at one instant apart. A take
-- at now counts the admissions after now - span, later ones included (a
-- caller whose clock is a little behind the previous one's), and takes
-- k = min(n, rate - count) waiters: so no interval of span ms holds more
-- than rate admissions, whatever order the callers' instants arrive in.
-- Takes are dropped only once they are span + lag before the earlier of now
-- and the latest take; a caller more than lag behind the latest take admits
-- nobody (it cannot know what was dropped).
--
-- KEYS[1]  lease STRING     ("<owner> <token> <expiry, unix ms>")
-- KEYS[2]  fence INTEGER    (the last token issued)
-- KEYS[3]  line ZSET        (member user id, score seq)
-- KEYS[4]  processing HASH  (user id -> "<seq> <taken at> [<seen>]", unix ms)
-- KEYS[5]  window ZSET      (member "<number>:<admitted>", score take instant)
-- KEYS[6]  window counter INTEGER
-- KEYS[7]  admitted ZSET    (member seq, score taken at)
-- KEYS[8]  seen ZSET        (member user id, score last seen, unix ms)
-- KEYS[9]  passed INTEGER   (waiters taken from the front, less those returned)
-- ARGV[1]  fence token
-- ARGV[2]  now, unix ms, by the caller's clock
-- ARGV[3]  n, at most this many
-- ARGV[4]  rate, admissions per span
-- ARGV[5]  span, ms (1000)
-- ARGV[6]  lag, ms: how far behind the latest admission a caller may be
-- ARGV[7]  the window keys' expiry, ms: a safety net
-- ARGV[8]  how long the admitted set remembers a place, ms
--
-- A waiter taken leaves the seen set; processing keeps its seen instant,
-- so that a return puts it back as it was. The passed counter grows by the
-- number taken.
--
-- Returns the passed counter after the take, then the taken, flat: passed,
-- user id, seq, user id, seq, ... (all strings).

local v = redis.call('GET', KEYS[1])
local now = tonumber(ARGV[2])
local token, expiry
if v then
  token, expiry = v:match(' (%d+) (%d+)$')
end
if token ~= ARGV[1] or tonumber(expiry) <= now or redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return redis.error_reply('FENCED fence token ' .. ARGV[1] .. ' is not the lease\'s')
end

local function none()
  return {redis.call('GET', KEYS[9]) or '0'}
end

redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now - tonumber(ARGV[8]))

local span, lag = tonumber(ARGV[5]), tonumber(ARGV[6])
local latest = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')[2]
local bound = now
if latest then
  latest = tonumber(latest)
  if now < latest - lag then
    return none()
  end
  bound = math.min(now, latest)
end
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', bound - span - lag)
local count = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. (now - span), '+inf')) do
  count = count + tonumber(m:match(':(%d+)$'))
end

local k = math.min(tonumber(ARGV[3]), tonumber(ARGV[4]) - count)
if k <= 0 then
  return none()
end
local popped = redis.call('ZPOPMIN', KEYS[3], k)
if #popped == 0 then
  return none()
end
-- Processing is written, and presence dropped, 500 waiters a call, well
-- within Lua's stack.
local proc, gone = {}, {}
for i = 1, #popped, 2 do
  local user = popped[i]
  local seq = string.format('%d', tonumber(popped[i + 1]))
  popped[i + 1] = seq
  local entry = seq .. ' ' .. ARGV[2]
  local seen = redis.call('ZSCORE', KEYS[8], user)
  if seen then
    entry = entry .. ' ' .. string.format('%d', tonumber(seen))
  end
  proc[#proc + 1] = user
  proc[#proc + 1] = entry
  gone[#gone + 1] = user
  if #proc == 1000 or i + 1 == #popped then
    redis.call('HSET', KEYS[4], unpack(proc))
    redis.call('ZREM', KEYS[8], unpack(gone))
    proc, gone = {}, {}
  end
end
local passed = redis.call('INCRBY', KEYS[9], #popped / 2)
redis.call('ZADD', KEYS[5], ARGV[2], redis.call('INCR', KEYS[6]) .. ':' .. (#popped / 2))
redis.call('PEXPIRE', KEYS[5], ARGV[7])
redis.call('PEXPIRE', KEYS[6], ARGV[7])
table.insert(popped, 1, tostring(passed))
return popped
