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
-- commit_matches: no sequential scan. Its statements join the seats (an
-- unnest the planner guesses at a hundred rows) to tickets, so even a plan
-- made for the table's real size reads it whole while it is small.
ALTER FUNCTION commit_matches(uuid[], text[], text[], text[], text[], jsonb[], integer[], double precision[],
                              text[], text[], timestamptz[], timestamptz[], bigint[], text[], bigint,
                              integer[], uuid[], integer[], text[], bytea[])
    SET enable_seqscan = off;

-- commit_match: planned for each call. Without a sequential scan its cached
-- plan walks the partial index of waiting tickets instead (id = ANY … AND
-- status = 'WAITING'), just as whole; planned with its arguments it takes the
-- primary key, and its few statements are cheap to plan.
ALTER FUNCTION commit_match(uuid, text, text, text, text, jsonb, integer, double precision, text, text,
                            timestamptz, timestamptz, bigint, text, bigint, uuid[], text[], bytea)
    SET plan_cache_mode = force_custom_plan;
