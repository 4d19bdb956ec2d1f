-- ended.lua is loaded in front of every script that reads a ticket hash's
-- end (cancel, enqueue, heartbeat, requeue, scan): Redis runs each script
-- alone, so the one definition is prepended when the scripts are built
-- (pool.go) rather than copied into each.

-- ended reports whether a ticket hash, read as its state, match and exp,
-- has ended by now (see enqueue.lua for the exp field).
local function ended(state, match, exp, now)
  local ms, of = nil, nil
  if exp then
    ms = exp:match('^%d+$')
    if not ms then
      ms, of = exp:match('^(%d+) (.+)$')
    end
  end
  if not ms then
    return false
  end
  if of then
    if state ~= 'claimed' or of ~= match then
      return false
    end
  elseif state ~= 'waiting' then
    return false
  end
  return tonumber(ms) <= now
end
