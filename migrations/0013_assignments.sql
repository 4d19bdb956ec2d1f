-- 0013: the provider queues' record of assignments (package
-- provider/record): each requester's ticket given to a provider's slot.
--
-- An assignment is OFFERED → ACCEPTED → ENDED, or ends DECLINED or EXPIRED
-- while offered; a queue that assigns at once records it ACCEPTED from the
-- start. The record deletes no row: the ended assignments are the history
-- of who was matched to whom.
CREATE TABLE assignments (
    id          uuid PRIMARY KEY,
    queue       text NOT NULL,
    ticket_id   uuid NOT NULL,
    requester   text NOT NULL,
    provider    text NOT NULL,
    status      text NOT NULL
                CHECK (status IN ('OFFERED', 'ACCEPTED', 'DECLINED', 'EXPIRED', 'ENDED')),
    score       double precision NOT NULL,
    -- Each term's contribution to score, {"specialty": 0.4, …}.
    parts       jsonb NOT NULL DEFAULT '{}',
    offered_at  timestamptz NOT NULL,
    -- NULL when the queue assigns at once (no acceptance window).
    accept_by   timestamptz CHECK (accept_by > offered_at),
    accepted_at timestamptz,
    ended_at    timestamptz,
    end_reason  text,
    version     bigint NOT NULL CHECK (version > 0),
    -- An offer has a window to answer in; only an accepted assignment has
    -- been accepted, and only a final one has ended, with its reason.
    CHECK (status <> 'OFFERED' OR accept_by IS NOT NULL),
    CHECK ((accepted_at IS NOT NULL) = (status IN ('ACCEPTED', 'ENDED'))),
    CHECK ((ended_at IS NOT NULL) = (status IN ('DECLINED', 'EXPIRED', 'ENDED'))),
    CHECK ((end_reason IS NOT NULL) = (ended_at IS NOT NULL))
);

-- One live assignment per ticket: a ticket offered to two providers at
-- once is refused by the second insert, whatever the pool believed.
CREATE UNIQUE INDEX assignments_one_live ON assignments (ticket_id)
    WHERE status IN ('OFFERED', 'ACCEPTED');

-- Live, and Offer's count against the capacity: a provider's held slots.
CREATE INDEX assignments_live ON assignments (queue, provider)
    WHERE status IN ('OFFERED', 'ACCEPTED');

-- Expire: the offers whose window closes first.
CREATE INDEX assignments_expiring ON assignments (queue, accept_by)
    WHERE status = 'OFFERED';
