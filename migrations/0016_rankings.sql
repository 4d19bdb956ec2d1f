-- 0016: the rankings' record (package ranking/record): the event ids each
-- board has counted, its metrics per item per hour, and its weights'
-- versions.

-- The ids seen, so that an event sent twice (a retry, a replay) counts
-- once. Kept for the retention only: Prune forgets those before its end.
CREATE TABLE ranking_events (
    board text NOT NULL,
    id    text NOT NULL,
    at    timestamptz NOT NULL,
    PRIMARY KEY (board, id)
);

-- Prune deletes by time. Events arrive roughly in time order, so a BRIN
-- index finds the old pages at almost no cost to each insert, where a
-- second B-tree would slow every Ingest.
CREATE INDEX ranking_events_at ON ranking_events USING brin (at);

-- The metrics as the record: each event's value summed into its item's
-- metric in the hour (UTC) of its instant. Policy-free: no weight is ever
-- stored here, so new weights re-score the past from these rows. first_at
-- is the earliest instant of the item's events in the bucket, a tie's
-- order. Items and metrics sort in byte order (COLLATE "C"), whatever the
-- database's collation: Scan hands items in that order, and the primary
-- key then yields a span's rows already grouped and sorted, streamed
-- without a sort of a million items.
CREATE TABLE ranking_buckets (
    board    text NOT NULL,
    item     text COLLATE "C" NOT NULL,
    metric   text COLLATE "C" NOT NULL,
    hour     timestamptz NOT NULL CHECK (date_trunc('hour', hour, 'UTC') = hour),
    value    double precision NOT NULL CHECK (value >= 0),
    first_at timestamptz NOT NULL CHECK (first_at >= hour AND first_at < hour + interval '1 hour'),
    PRIMARY KEY (board, item, metric, hour)
);

-- Scan and Prune: a board's buckets of a span of hours.
CREATE INDEX ranking_buckets_by_hour ON ranking_buckets (board, hour);

-- Each version of a board's weights, kept: a ranking says under which
-- version it was scored, and an operator can see who set what.
CREATE TABLE ranking_weights (
    board   text NOT NULL,
    version bigint NOT NULL CHECK (version > 0),
    -- {"joins": {"weight": 1, "transform": "log1p"}, …}
    metrics jsonb NOT NULL,
    set_by  text NOT NULL,
    set_at  timestamptz NOT NULL,
    PRIMARY KEY (board, version)
);
