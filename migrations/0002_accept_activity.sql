-- 0002: the accept window and a second matching dimension (DESIGN §3, §6).

-- The activity level the trusted backend put in the token, matched as a
-- weighted second dimension next to skill. Kept on the record so that a
-- rebuilt pool matches exactly as the first one did.
ALTER TABLE tickets ADD COLUMN activity double precision NOT NULL DEFAULT 0;

-- The users who accepted a PENDING_ACCEPT match, in the order they did:
-- ["alice", "bob"]. Written only by a compare-and-set on the match row
-- (state PENDING_ACCEPT, accept_by not passed).
ALTER TABLE matches ADD COLUMN accepted jsonb NOT NULL DEFAULT '[]';

-- The matches whose accept window is open, per partition: what rebuilds the
-- pending index in Redis after a wipe.
CREATE INDEX matches_pending_by_partition ON matches (queue, region, accept_by)
    WHERE state = 'PENDING_ACCEPT';
