-- put.lua: write one served Top N whole, unless what is stored is newer.
--
-- A refresh replaces the view of its weights version or an older one; a
-- read that found the key missing writes only where nothing of its version
-- or a newer one is stored, so a rebuild racing a refresh never puts back
-- an older view, and no writer ever puts back older weights over newer
-- (a recompute after a weights change wins over a refresh that read the
-- weights before it).
--
-- A refresh under the board's lease passes its fencing token: a writer
-- whose lease was taken over writes nothing.
--
-- KEYS[1]  top HASH: v (weights version), sum (digest of the items), at (the
--          refresh's instant, unix ns), view (JSON)
-- KEYS[2]  the board's lease key (STRING: "<owner> <token> <expiry>")
-- ARGV[1]  weights version of the new view
-- ARGV[2]  digest of its items: equal digests, equal Top N
-- ARGV[3]  the view, JSON
-- ARGV[4]  the key's expiry, ms: past the period's end and the retention
-- ARGV[5]  "1" for a read's rebuild (write only over an older version),
--          "0" for a refresh
-- ARGV[6]  the refresh's instant, unix ns
-- ARGV[7]  the refresh's fencing token, or "0" for a write without the
--          lease (a read's rebuild, a recompute after new weights)
--
-- Returns -1 when the lease is no longer the token's, 0 when the stored view was kept, 1 when written with the same
-- items and version, 2 when written with other items or another version.

if ARGV[7] ~= '0' then
  local l = redis.call('GET', KEYS[2])
  local token = l and l:match('^%S+ (%d+)')
  if token ~= ARGV[7] then
    return -1
  end
end
local old = redis.call('HMGET', KEYS[1], 'v', 'sum')
local ov = old[1] and tonumber(old[1])
local nv = tonumber(ARGV[1])
if ov then
  if ov > nv then
    return 0
  end
  if ARGV[5] == '1' and ov == nv then
    return 0
  end
end
local res = 2
if ov == nv and old[2] == ARGV[2] then
  res = 1
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'sum', ARGV[2], 'at', ARGV[6], 'view', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return res
