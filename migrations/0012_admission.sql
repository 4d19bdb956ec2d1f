-- 0012: the admission queue's record (package admission/record): every
-- user's places in each admission queue with their tokens, and each queue's
-- admitter epoch.
--
-- A place is WAITING → READY (admitted, holding its token) → CLAIMED →
-- CONSUMED, or ends EXPIRED, LEFT or ABANDONED. The record deletes no row:
-- the ended places are what the measured rate and the ETA's error are read
-- from.

-- seq is the queues' order: one identity for every queue, so strictly
-- increasing within each. Entries take their queue's advisory lock until
-- they commit (admission/record/enter.go), so a reader never sees a seq
-- before every smaller one of its queue is visible.
CREATE TABLE admission_places (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue        text NOT NULL,
    user_id      text NOT NULL,
    status       text NOT NULL
                 CHECK (status IN ('WAITING', 'READY', 'CLAIMED', 'CONSUMED', 'EXPIRED', 'LEFT', 'ABANDONED')),
    entered_at   timestamptz NOT NULL,
    -- The three are set together, once, by the admission, and kept after
    -- the place ends.
    token        text,
    expires_at   timestamptz,
    admitted_at  timestamptz,
    -- NULL when no ETA was shown at entry.
    predicted_at timestamptz,
    -- NULL unless CLAIMED or CONSUMED (a release clears it).
    claimed_at   timestamptz,
    consumed_at  timestamptz,
    version      bigint NOT NULL,
    CHECK ((token IS NULL) = (expires_at IS NULL) AND (token IS NULL) = (admitted_at IS NULL)),
    -- Waiting places have no token yet; admitted ones have theirs for good.
    CHECK (CASE status WHEN 'WAITING' THEN token IS NULL
                       WHEN 'LEFT' THEN true
                       WHEN 'ABANDONED' THEN token IS NULL
                       ELSE token IS NOT NULL END)
);

-- One live place per user and queue: a second entry finds the place the
-- user holds instead of queueing them twice.
CREATE UNIQUE INDEX admission_places_one_live ON admission_places (queue, user_id)
    WHERE status IN ('WAITING', 'READY', 'CLAIMED');

-- A token admits one place: a second admission can never hand it out again.
CREATE UNIQUE INDEX admission_places_token ON admission_places (token)
    WHERE token IS NOT NULL;

-- Place: a user's newest place, live or ended; Abandon: users' waiting ones.
CREATE INDEX admission_places_by_user ON admission_places (queue, user_id, seq);

-- Waiting: the line is rebuilt from the waiting places in seq order.
CREATE INDEX admission_places_waiting ON admission_places (queue, seq)
    WHERE status = 'WAITING';

-- Expire: the tokens whose life ends first.
CREATE INDEX admission_places_expiring ON admission_places (queue, expires_at)
    WHERE status IN ('READY', 'CLAIMED');

-- Admitted: the admissions since a moment, for the rate and the ETA's error.
CREATE INDEX admission_places_admitted ON admission_places (queue, admitted_at)
    WHERE admitted_at IS NOT NULL;

-- The fencing epoch of each queue's admitter, as leases holds the
-- partitions' (0001): an Admit carrying an older epoch comes from an
-- admitter that lost its lease and is refused.
CREATE TABLE admission_epochs (
    queue text PRIMARY KEY,
    epoch bigint NOT NULL CHECK (epoch > 0)
);
