-- 0018: the display name a ticket was joined with (matcher.CleanName's,
-- at most 32 characters); NULL when the player gave none. A match's
-- players carry theirs in matches.players, which is JSON already.
ALTER TABLE tickets ADD COLUMN name text;
