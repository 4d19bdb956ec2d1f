-- 0011: commit_match and commit_matches look their tickets up by primary key
-- at any table size.
--
-- PL/pgSQL caches a statement's plan per connection. A connection's first
-- commits on a new deployment run while tickets is nearly empty, where
-- reading the whole table is the cheapest plan; that plan then stays until
-- the next ANALYZE of tickets, and every commit reads the whole table to lock
-- and update a handful of rows (8 ms a batch at 40,000 tickets, most of the
-- database's time under load). Every statement in the two functions wants a
-- few tickets by id, never a scan.
--
-- commit_matches, which commits every batch, one match or many: no
-- sequential scan, and its generic plans always. Its statements join the
-- seats (an unnest the planner guesses at a hundred rows) to tickets, so a
-- plan made for the table's real size still reads it whole while it is
-- small; and left to choose, the plan cache kept planning several statements
-- afresh on every call (two fifths of the database's time in a commit).
ALTER FUNCTION commit_matches(uuid[], text[], text[], text[], text[], jsonb[], integer[], double precision[],
                              text[], text[], timestamptz[], timestamptz[], bigint[], text[], bigint,
                              integer[], uuid[], integer[], text[], bytea[])
    SET enable_seqscan = off
    SET plan_cache_mode = force_generic_plan;

-- commit_match, which commit_matches calls only for a batch that seats one
-- ticket twice: planned for each call. Without a sequential scan its cached
-- plan walks the partial index of waiting tickets instead (id = ANY … AND
-- status = 'WAITING'), just as whole; planned with its arguments it takes
-- the primary key.
ALTER FUNCTION commit_match(uuid, text, text, text, text, jsonb, integer, double precision, text, text,
                            timestamptz, timestamptz, bigint, text, bigint, uuid[], text[], bytea)
    SET plan_cache_mode = force_custom_plan;
