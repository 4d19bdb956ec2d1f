-- 0010: commit_matches, a matching pass's matches in one set-based statement.
--
-- commit_match (0001) runs five statements and a foreign-key check per
-- ticket for every match; a busy partition commits ten or more at a time, so
-- the per-statement cost, not the rows, was the bound. commit_matches checks
-- and writes a whole batch with a fixed number of statements, and answers
-- with one row per match, in order, as commit_match would have:
-- 'committed' (event_id/event_at of its match.found, NULL for a retry of a
-- commit already made), 'stale' (p_epoch no longer holds the match's
-- partition), or 'shortfall' (not every ticket WAITING; still_waiting lists
-- those that are). Nothing of a match that is not committed is written.
--
-- Matches are given column-wise (p_ids[i], p_queue[i], … describe match i);
-- seats and event users flattened with the index of their match
-- (p_seat_match[k] = i seats p_seat_ticket[k] in match i). A ticket seated
-- by two matches of one batch goes to the first that can take it, which
-- takes the matches one by one through commit_match.
CREATE FUNCTION commit_matches(
    p_ids            uuid[],
    p_queue          text[],
    p_region         text[],
    p_state          text[],
    p_formed_by      text[],
    p_players        jsonb[],
    p_bots           integer[],
    p_spread         double precision[],
    p_server_address text[],
    p_server_session text[],
    p_accept_by      timestamptz[],
    p_created_at     timestamptz[],
    p_version        bigint[],
    p_partition      text[],
    p_epoch          bigint,
    p_seat_match     integer[],
    p_seat_ticket    uuid[],
    p_user_match     integer[],
    p_user           text[],
    p_payload        bytea[]
) RETURNS TABLE (outcome text, still_waiting text[], event_id bigint, event_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    n      integer := coalesce(cardinality(p_ids), 0);
    live   text[];
    ok     boolean[];
    retry  boolean[];
    events bigint[];
    i      integer;
BEGIN
    IF (SELECT count(DISTINCT t) FROM unnest(p_seat_ticket) t) <> cardinality(p_seat_ticket) THEN
        FOR i IN 1 .. n LOOP
            RETURN QUERY SELECT c.outcome, c.still_waiting::text[], c.event_id, c.event_at FROM commit_match(
                p_ids[i], p_queue[i], p_region[i], p_state[i], p_formed_by[i], p_players[i],
                p_bots[i], p_spread[i], p_server_address[i], p_server_session[i], p_accept_by[i],
                p_created_at[i], p_version[i], p_partition[i], p_epoch,
                ARRAY(SELECT s.t FROM unnest(p_seat_match, p_seat_ticket) WITH ORDINALITY s(m, t, k)
                       WHERE s.m = i ORDER BY s.k),
                ARRAY(SELECT u.u FROM unnest(p_user_match, p_user) WITH ORDINALITY u(m, u, k)
                       WHERE u.m = i ORDER BY u.k),
                p_payload[i]) c;
        END LOOP;
        RETURN;
    END IF;

    IF p_epoch > 0 THEN
        -- FOR SHARE, as commit_match: a new owner raising the epoch waits
        -- for this commit to finish.
        SELECT coalesce(array_agg(l.partition), '{}') INTO live
          FROM (SELECT partition FROM leases
                 WHERE partition = ANY (p_partition) AND epoch = p_epoch
                 ORDER BY partition
                   FOR SHARE) AS l;
    END IF;

    -- Every ticket of the batch locked in id order: two batches over the
    -- same tickets (a deposed owner's and its successor's) queue behind
    -- each other instead of deadlocking.
    PERFORM 1 FROM tickets WHERE id = ANY (p_seat_ticket) ORDER BY id FOR UPDATE;

    -- Per match: every seat WAITING (ok), or every seat already in this
    -- very match (a retry of a commit whose reply was lost).
    SELECT array_agg(coalesce(v.ok, false) AND (p_epoch = 0 OR p_partition[g.i] = ANY (live)) ORDER BY g.i),
           array_agg(coalesce(v.retry, false) ORDER BY g.i)
      INTO ok, retry
      FROM generate_series(1, n) AS g(i)
      LEFT JOIN (SELECT s.m,
                        count(t.id) = count(*) AND bool_and(t.status = 'WAITING') AS ok,
                        count(*) FILTER (WHERE t.match_id = p_ids[s.m]) = count(*) AS retry
                   FROM unnest(p_seat_match, p_seat_ticket) AS s(m, tid)
                   LEFT JOIN tickets t ON t.id = s.tid
                  GROUP BY s.m) AS v ON v.m = g.i;

    INSERT INTO matches (id, queue, region, state, formed_by, players, bots, spread,
                         server_address, server_session, accept_by, created_at, version)
    SELECT p_ids[g.i], p_queue[g.i], p_region[g.i], p_state[g.i], p_formed_by[g.i], p_players[g.i],
           p_bots[g.i], p_spread[g.i], p_server_address[g.i], p_server_session[g.i],
           p_accept_by[g.i], p_created_at[g.i], p_version[g.i]
      FROM generate_series(1, n) AS g(i)
     WHERE ok[g.i];

    UPDATE tickets t
       SET status = 'MATCHED', match_id = p_ids[s.m], updated_at = p_created_at[s.m],
           version = t.version + 1
      FROM unnest(p_seat_match, p_seat_ticket) AS s(m, tid)
     WHERE t.id = s.tid AND ok[s.m];

    -- One match.found row per committed match; ids drawn in match order so
    -- the relay, oldest first, keeps it.
    SELECT array_agg(CASE WHEN ok[g.i] THEN nextval(pg_get_serial_sequence('outbox', 'id')) END ORDER BY g.i)
      INTO events
      FROM generate_series(1, n) AS g(i);
    INSERT INTO outbox (id, users, payload)
    SELECT events[g.i],
           ARRAY(SELECT u.u FROM unnest(p_user_match, p_user) WITH ORDINALITY u(m, u, k)
                  WHERE u.m = g.i ORDER BY u.k),
           p_payload[g.i]
      FROM generate_series(1, n) AS g(i)
     WHERE ok[g.i];

    RETURN QUERY
    SELECT CASE
               WHEN p_epoch > 0 AND NOT p_partition[g.i] = ANY (live) THEN 'stale'
               WHEN ok[g.i] OR retry[g.i] THEN 'committed'
               ELSE 'shortfall'
           END,
           CASE
               WHEN (p_epoch > 0 AND NOT p_partition[g.i] = ANY (live)) OR ok[g.i] OR retry[g.i] THEN NULL
               ELSE ARRAY(SELECT t.id::text
                            FROM unnest(p_seat_match, p_seat_ticket) AS s(m, tid)
                            JOIN tickets t ON t.id = s.tid
                           WHERE s.m = g.i AND t.status = 'WAITING'
                           ORDER BY t.id)
           END,
           events[g.i],
           CASE WHEN ok[g.i] THEN now() END
      FROM generate_series(1, n) AS g(i)
     ORDER BY g.i;
END
$$;
