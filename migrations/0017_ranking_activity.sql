-- 0017: indexes for the rankings' matchmaking boards, counted from the
-- record itself (ledger Activity): joins per queue per hour by
-- tickets.enqueued_at, matches by matches.created_at, user cancels by
-- tickets.updated_at.

-- Tickets and matches are inserted in roughly the order of these times, so
-- a BRIN index (one summary per range of pages) finds an hour's rows
-- reading only the pages that hold them, at a near-zero cost to each
-- insert: a join or a match writes no extra B-tree entry. A page range
-- not yet summarized is always read; autosummarize has autovacuum
-- summarize each range once it fills, so that tail stays short.
CREATE INDEX tickets_enqueued_brin ON tickets USING brin (enqueued_at)
    WITH (autosummarize = on);
CREATE INDEX matches_created_brin ON matches USING brin (created_at)
    WITH (autosummarize = on);

-- A cancel updates an old row, so updated_at follows no page order; the
-- partial B-tree holds only the user cancels, and a join (WAITING) never
-- enters it.
CREATE INDEX tickets_user_cancels ON tickets (updated_at)
    WHERE status = 'CANCELLED' AND cancel_reason = 'user';
