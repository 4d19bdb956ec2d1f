-- gcra.lua: count one event against a rate limit of N events per period with
-- a burst of B (at most B at once; B may differ from N), by the generic cell
-- rate algorithm.
--
-- The state is a single number, the theoretical arrival time (TAT): the
-- moment at which the subject's budget would be whole again. Each allowed
-- event pushes it one emission interval T = period / N further; an event is
-- refused when that would put the TAT more than B intervals ahead of now.
-- The key expires exactly when the TAT passes, so an idle subject costs
-- nothing.
--
-- KEYS[1]  STRING  the subject's TAT, in microseconds since the Unix epoch
-- ARGV[1]  T, the emission interval, in microseconds (may be fractional)
-- ARGV[2]  B, the burst
-- ARGV[3]  now in microseconds since the epoch, or "" for the Redis server's
--          clock (TIME), which every gateway shares
--
-- Returns {allowed (1 or 0), retry_after_us, remaining}: when refused, the
-- time until one more event fits; when allowed, how many more fit now.
-- Numbers stay below 2^53, so the doubles of Lua hold them exactly; the TAT is
-- written with %.0f because Lua's default formatting keeps only 14 digits.

local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[3])
end

local limit = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tat < now then
  tat = now
end
local new_tat = tat + interval
local debt = new_tat - now
if debt > limit then
  return {0, math.ceil(debt - limit), 0}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.max(1, math.ceil(debt / 1000)))
return {1, 0, math.floor((limit - debt) / interval)}
