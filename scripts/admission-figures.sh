#!/bin/sh
# The admission queue's figures from its record, admission_places
# (docs/BENCHMARKS.md "Admission queue"): places by status; admissions,
# their span and the largest count in any one-second window [t, t+1s) for
# every admitted_at t; tokens and distinct tokens; the ETA's relative error
# |admitted_at - predicted_at| / (admitted_at - entered_at) at p50 and p90,
# over the run and, given SPLIT (a timestamp, e.g. the rate change's),
# before and after it.
#
#   scripts/admission-figures.sh SCHEMA [QUEUE] [SPLIT]
#
# PGURL overrides the database (default: the benchmarks' local test one).
set -eu
schema=${1:?usage: admission-figures.sh SCHEMA [QUEUE] [SPLIT]}
queue=${2:-launch}
split=${3:-infinity}
url=${PGURL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}

psql "$url" -X -q -v ON_ERROR_STOP=1 -v schema="$schema" -v queue="$queue" -v split="$split" <<'SQL'
SET search_path = :"schema";
\echo places by status
SELECT status, count(*) FROM admission_places WHERE queue = :'queue' GROUP BY 1 ORDER BY 1;
\echo admissions: count, span, largest count in any one-second window, then with instants in whole ms
-- timestamptz holds microseconds: [t, t+1s) is [t, t+999999µs]. The
-- admitter's window scores its takes in whole milliseconds (line/lua/take.lua).
SELECT count(*) AS admitted,
       min(admitted_at) AS first, max(admitted_at) AS last,
       round(count(*) / nullif(extract(epoch FROM max(admitted_at) - min(admitted_at)), 0), 2) AS per_second,
       max(n) AS max_in_one_second, max(n_ms) AS max_in_one_second_ms
FROM (SELECT admitted_at,
             count(*) OVER (ORDER BY admitted_at
                            RANGE BETWEEN CURRENT ROW AND INTERVAL '999999 microseconds' FOLLOWING) AS n,
             count(*) OVER (ORDER BY date_trunc('milliseconds', admitted_at)
                            RANGE BETWEEN CURRENT ROW AND INTERVAL '999 milliseconds' FOLLOWING) AS n_ms
      FROM admission_places WHERE queue = :'queue' AND admitted_at IS NOT NULL) w;
\echo one-second windows holding more than one take (gap between consecutive takes under 1 s)
SELECT count(*) AS gaps_under_1s, min(gap) AS smallest_gap_s
FROM (SELECT extract(epoch FROM t - lag(t) OVER (ORDER BY t)) AS gap
      FROM (SELECT DISTINCT admitted_at AS t FROM admission_places
            WHERE queue = :'queue' AND admitted_at IS NOT NULL) d) g
WHERE gap < 1;
\echo tokens: given, distinct, given twice
SELECT count(token) AS tokens, count(DISTINCT token) AS distinct_tokens,
       (SELECT count(*) FROM (SELECT token FROM admission_places WHERE queue = :'queue' AND token IS NOT NULL
                              GROUP BY token HAVING count(*) > 1) d) AS given_twice
FROM admission_places WHERE queue = :'queue';
\echo ETA error (error / wait): whole run, then admitted before and after the split
WITH e AS (
  SELECT admitted_at < :'split'::timestamptz AS before,
         abs(extract(epoch FROM admitted_at - predicted_at))
           / nullif(extract(epoch FROM admitted_at - entered_at), 0) AS err
  FROM admission_places
  WHERE queue = :'queue' AND admitted_at IS NOT NULL AND predicted_at IS NOT NULL)
SELECT 'all' AS part, count(err), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY err)::numeric, 3) AS p50,
       round(percentile_cont(0.9) WITHIN GROUP (ORDER BY err)::numeric, 3) AS p90 FROM e
UNION ALL
SELECT CASE WHEN before THEN 'before split' ELSE 'after split' END, count(err),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY err)::numeric, 3),
       round(percentile_cont(0.9) WITHIN GROUP (ORDER BY err)::numeric, 3)
FROM e GROUP BY before ORDER BY 1;
SQL
