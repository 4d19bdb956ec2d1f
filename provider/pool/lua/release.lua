-- release.lua: free the slot an assignment holds; one not held is no error.
--
-- KEYS[1]  held SET  (assignment ids)
-- ARGV[1]  assignment id
--
-- Returns 1 when a slot was freed, else 0.

return redis.call('SREM', KEYS[1], ARGV[1])
