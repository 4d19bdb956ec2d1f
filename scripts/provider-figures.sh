#!/bin/sh
# A provider queue's invariants from its record (docs/BENCHMARKS.md
# "Provider queue"): the most assignments live at once per provider (from
# each assignment's offered_at and ended_at, compared with the largest
# capacity the run gave), requesters served twice, tickets with two live
# assignments, assignments by status, matches with a provider seat, and
# tickets by status.
#
#   scripts/provider-figures.sh [QUEUE]
#
# PGURL names the database (default: the benchmarks' local test one).
set -eu
queue=${1:-advice}
url=${PGURL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}

psql "$url" -X -q -v ON_ERROR_STOP=1 -v queue="$queue" <<'SQL'
\echo most assignments live at once, per provider: the largest of them
WITH ev AS (
    SELECT provider, offered_at AS t, 1 AS d FROM assignments WHERE queue = :'queue'
    UNION ALL
    SELECT provider, ended_at, -1 FROM assignments WHERE queue = :'queue' AND ended_at IS NOT NULL),
run AS (SELECT provider, sum(d) OVER (PARTITION BY provider ORDER BY t, d) AS live FROM ev)
SELECT max(live) AS most_live FROM run;
\echo requesters served twice (two accepted or ended assignments of one ticket)
SELECT count(*) FROM (SELECT ticket_id FROM assignments
    WHERE queue = :'queue' AND status IN ('ACCEPTED', 'ENDED') GROUP BY 1 HAVING count(*) > 1) t;
\echo tickets with two live assignments
SELECT count(*) FROM (SELECT ticket_id FROM assignments
    WHERE queue = :'queue' AND status IN ('OFFERED', 'ACCEPTED') GROUP BY 1 HAVING count(*) > 1) t;
\echo assignments by status
SELECT status, count(*) FROM assignments WHERE queue = :'queue' GROUP BY 1 ORDER BY 1;
\echo matches with a provider seat, tickets by status
SELECT count(*) FROM matches WHERE queue = :'queue' AND provider IS NOT NULL;
SELECT status, count(*) FROM tickets WHERE queue = :'queue' GROUP BY 1 ORDER BY 1;
SQL
