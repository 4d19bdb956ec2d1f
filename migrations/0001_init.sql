-- 0001: the record of tickets, matches and undelivered events (DESIGN §3, §5, §7).
--
-- Times are timestamptz (microsecond precision); the ledger truncates to
-- microseconds before writing so that what it returns equals what it stored.

-- matches comes first: tickets.match_id refers to it.
CREATE TABLE matches (
    id             uuid PRIMARY KEY,
    queue          text NOT NULL,
    region         text NOT NULL,
    state          text NOT NULL,
    formed_by      text NOT NULL,
    -- [{"ticketId": …, "userId": …, "skill": …}, …] in seat order. Seats are
    -- read and written together with the match, never queried one by one.
    players        jsonb NOT NULL,
    bots           integer NOT NULL DEFAULT 0,
    spread         double precision NOT NULL DEFAULT 0,
    -- Both NULL until a server is allocated.
    server_address text,
    server_session text,
    -- NULL when the queue has no accept step.
    accept_by      timestamptz,
    created_at     timestamptz NOT NULL,
    version        bigint NOT NULL
);

CREATE TABLE tickets (
    id            uuid PRIMARY KEY,
    user_id       text NOT NULL,
    queue         text NOT NULL,
    region        text NOT NULL,
    status        text NOT NULL
                  CHECK (status IN ('WAITING', 'MATCHED', 'CANCELLED', 'EXPIRED')),
    skill         double precision NOT NULL,
    estimated     boolean NOT NULL DEFAULT false,
    -- NULL when the ticket has no attributes.
    attributes    jsonb,
    enqueued_at   timestamptz NOT NULL,
    -- Priority head start on the wait-order clock; the deadline ignores it.
    head_start_ms bigint NOT NULL DEFAULT 0,
    -- Stamped once at join, never moved.
    deadline      timestamptz NOT NULL,
    match_id      uuid REFERENCES matches (id),
    cancel_reason text,
    updated_at    timestamptz NOT NULL,
    version       bigint NOT NULL
);

-- One WAITING ticket per user, whatever the queue: a retried join finds the
-- ticket it already has instead of queueing the player twice.
CREATE UNIQUE INDEX tickets_one_waiting_per_user ON tickets (user_id)
    WHERE status = 'WAITING';

-- Reconciliation and pool rebuilds read the waiting tickets of one partition.
CREATE INDEX tickets_waiting_by_partition ON tickets (queue, region)
    WHERE status = 'WAITING';

-- A reconnecting client is told about its tickets resolved since a moment.
CREATE INDEX tickets_by_user_updated ON tickets (user_id, updated_at);

-- Events written in the same transaction as the change they report, deleted
-- once published (at least once) to every listed user.
CREATE TABLE outbox (
    id         bigserial PRIMARY KEY,
    users      text[] NOT NULL,
    -- bytea, not jsonb: the frame must reach clients byte for byte as built.
    payload    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbox_by_created_at ON outbox (created_at);

-- The fencing epoch of each partition's current matcher. A commit carrying an
-- older epoch comes from an owner that lost its lease and is refused.
CREATE TABLE leases (
    partition  text PRIMARY KEY,
    epoch      bigint NOT NULL DEFAULT 0,
    owner      text,
    expires_at timestamptz
);

-- Per-queue configuration overrides (DESIGN §3).
CREATE TABLE queue_configs (
    name       text PRIMARY KEY,
    config     jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- commit_match records a formed match: the hot path of the matcher, so it is
-- one statement and one round trip. It returns outcome 'committed', 'stale'
-- (the epoch no longer holds the partition lease; nothing written) or
-- 'shortfall' (not every ticket is WAITING; nothing written, still_waiting
-- lists those that are). On commit, event_id and event_at identify the
-- match.found outbox row, so the caller can publish it at once. p_epoch 0
-- skips the lease check. Committing the same match again is a success that
-- writes nothing (event_id NULL).
--
-- It checks before it writes rather than writing and raising, so a shortfall,
-- which the cancel/claim race makes routine, costs no exception and no
-- subtransaction.
CREATE FUNCTION commit_match(
    p_id             uuid,
    p_queue          text,
    p_region         text,
    p_state          text,
    p_formed_by      text,
    p_players        jsonb,
    p_bots           integer,
    p_spread         double precision,
    p_server_address text,
    p_server_session text,
    p_accept_by      timestamptz,
    p_created_at     timestamptz,
    p_version        bigint,
    p_partition      text,
    p_epoch          bigint,
    p_tickets        uuid[],
    p_users          text[],
    p_payload        bytea,
    OUT outcome       text,
    OUT still_waiting uuid[],
    OUT event_id      bigint,
    OUT event_at      timestamptz
) LANGUAGE plpgsql AS $$
BEGIN
    IF p_epoch > 0 THEN
        -- FOR SHARE: a new owner raising the epoch waits for this commit to
        -- finish, so no commit of the old owner lands after the handover.
        PERFORM 1 FROM leases
         WHERE partition = p_partition AND epoch = p_epoch
           FOR SHARE;
        IF NOT FOUND THEN
            outcome := 'stale';
            RETURN;
        END IF;
    END IF;

    -- Lock the tickets that are still waiting, in id order, so that commits
    -- of overlapping player sets queue behind each other instead of
    -- deadlocking. A ticket resolved meanwhile drops out of the set once its
    -- transaction commits.
    SELECT array_agg(id ORDER BY id) INTO still_waiting
      FROM (SELECT id FROM tickets
             WHERE id = ANY (p_tickets) AND status = 'WAITING'
             ORDER BY id
               FOR UPDATE) AS w;
    IF coalesce(cardinality(still_waiting), 0) <> cardinality(p_tickets) THEN
        -- A retry of a commit whose reply was lost finds every ticket already
        -- seated in this very match: report success, not a shortfall.
        IF (SELECT count(*) FROM tickets
             WHERE id = ANY (p_tickets) AND match_id = p_id) = cardinality(p_tickets) THEN
            outcome := 'committed';
            still_waiting := NULL;
            RETURN;
        END IF;
        outcome := 'shortfall';
        RETURN;
    END IF;

    INSERT INTO matches (id, queue, region, state, formed_by, players, bots, spread,
                         server_address, server_session, accept_by, created_at, version)
    VALUES (p_id, p_queue, p_region, p_state, p_formed_by, p_players, p_bots, p_spread,
            p_server_address, p_server_session, p_accept_by, p_created_at, p_version);

    UPDATE tickets
       SET status = 'MATCHED', match_id = p_id, updated_at = p_created_at,
           version = version + 1
     WHERE id = ANY (still_waiting);

    INSERT INTO outbox (users, payload) VALUES (p_users, p_payload)
    RETURNING id, created_at INTO event_id, event_at;

    outcome := 'committed';
    still_waiting := NULL;
END
$$;
