package matcher

import (
	"context"
	"time"
)

// TicketCursor is a position in a user's resolved tickets, newest first: a
// resolved ticket's updated_at (when it was resolved) and id, the keyset of
// an index the record already keeps. The zero cursor is before the newest.
type TicketCursor struct {
	At time.Time
	ID string
}

// IsZero reports whether c is the zero cursor.
func (c TicketCursor) IsZero() bool { return c.At.IsZero() && c.ID == "" }

// TicketPage is a bounded list of one user's tickets with their matches.
type TicketPage struct {
	Tickets []Ticket
	Matches []Match
	More    bool
	Next    TicketCursor
}

// Ledger is the durable record of tickets, matches and the outbox. It is the
// source of truth: the Redis pool is rebuilt from it. Implementations:
// ledger.Postgres and ledger.Memory; both pass ledger's contract tests.
//
// Every method that changes a ticket or a match also writes the outbox events
// describing the change, in the same transaction.
type Ledger interface {
	// CreateTicket records a new WAITING ticket (ID, EnqueuedAt, Deadline and
	// the rest already filled in; Version is set to 1). If the user already has
	// a WAITING ticket it returns *AlreadyQueuedError carrying that ticket;
	// if the user is seated in a PENDING_ACCEPT match, *AlreadyMatchedError
	// naming it (checked atomically with the insert). A READY match does not
	// keep its players from joining again.
	CreateTicket(ctx context.Context, t Ticket) (Ticket, error)

	// Ticket returns one ticket, or an error wrapping ErrNotFound.
	Ticket(ctx context.Context, id string) (Ticket, error)

	// Match returns one match, or an error wrapping ErrNotFound.
	Match(ctx context.Context, id string) (Match, error)

	// UserState returns what a reconnecting client must be told, bounded by
	// limit: the user's live tickets (WAITING, or updated since `since` and
	// MATCHED into a match that is PENDING_ACCEPT or READY; the limit newest
	// of them), the limit newest tickets resolved (not WAITING) since
	// `since`, and the matches of those tickets. More reports that older
	// tickets resolved since `since` were left out, and Next is the position
	// of the oldest resolved ticket returned, for UserTickets.
	UserState(ctx context.Context, userID string, since time.Time, limit int) (TicketPage, error)

	// UserTickets pages the user's resolved tickets (any status but WAITING)
	// newest first, in (UpdatedAt, ID) order, strictly before `before` (the
	// zero cursor: from the newest), at most limit of them, with their
	// matches. More and Next say whether and where the next page starts.
	UserTickets(ctx context.Context, userID string, before TicketCursor, limit int) (TicketPage, error)

	// Resolve moves a WAITING ticket to CANCELLED (with reason) or EXPIRED,
	// compare-and-set on WAITING, and writes a ticket.update event. If the
	// ticket is no longer WAITING it returns *NotWaitingError with its state.
	// It returns the written outbox events (with their IDs) so the caller can
	// publish them at once and delete them, leaving the relay only what a
	// crash interrupted.
	Resolve(ctx context.Context, id string, status TicketStatus, reason string, at time.Time) (Ticket, []Event, error)

	// CommitMatches records formed matches in one transaction (one round
	// trip and one log flush on PostgreSQL), each in order: the lease epoch
	// is checked (epoch 0 skips the check), the match row inserted, every
	// ticket moved WAITING→MATCHED, and a match.found event written for
	// every player. results[i] tells what became of ms[i]: its written
	// outbox events (with their IDs, see Resolve; none for a retry of a
	// commit already made), or *ShortfallError (not every ticket WAITING;
	// it lists those that are) or ErrStaleEpoch, in which case nothing of
	// that match was written. A ticket named by two matches of the batch
	// goes to the first. An error for the batch as a whole (invalid input,
	// a reused match id, the record unreachable) wrote nothing, except when
	// it was the reply that was lost (a dropped connection, a timeout): the
	// batch may then have been written, and committing the same matches
	// again tells (see the engine's settle).
	CommitMatches(ctx context.Context, ms []Match, epoch int64) ([]CommitResult, error)

	// Accept records userID's acceptance of a PENDING_ACCEPT match: a
	// compare-and-set on the match, which must be PENDING_ACCEPT with `at`
	// before its AcceptBy, else *MatchStateError carries its current state.
	// A user not seated in the match gets an error wrapping ErrNotFound.
	// Accepting twice changes nothing. When the last player accepts, the
	// match becomes READY and a match.ready event for every player is
	// written. It returns the match as it now is and the written events.
	// A provider match (Match.Provider set) is accepted by its provider
	// alone, whose accept makes it READY at once (Accepted = [provider]);
	// its requester, though seated, has nothing to accept and gets an
	// error wrapping ErrNotFound, as a stranger does. Its events still go
	// to the players only: the requester.
	Accept(ctx context.Context, matchID, userID string, at time.Time) (Match, []Event, error)

	// Dissolve ends a PENDING_ACCEPT match in one transaction. With a
	// Decliner (who must be seated, and decline before AcceptBy) that
	// player's ticket ends CANCELLED (reason declined) and every other
	// player's goes back to WAITING; without one (the window passed: `At`
	// must not be before AcceptBy) the players who did not accept end
	// CANCELLED (accept_timeout) and those who did go back to WAITING. A
	// ticket going back keeps its enqueue time, head start and deadline,
	// loses its match id, and its version grows; if its user has joined
	// another queue meanwhile it ends CANCELLED (superseded) instead. The
	// match becomes DISSOLVED. Events: match.dissolved for every player,
	// then a ticket.update per ticket. A match in any other state, or a
	// window that does not allow it, is *MatchStateError.
	// A provider match is declined by its provider alone (the requester or
	// anyone else as Decliner gets an error wrapping ErrNotFound); whether
	// the provider declined or let the window pass, the requester did
	// nothing wrong and their ticket goes back to WAITING as above.
	Dissolve(ctx context.Context, req DissolveRequest) (Dissolution, []Event, error)

	// Pending lists the PENDING_ACCEPT matches of a (queue, region), soonest
	// AcceptBy first (rebuilding the pending index).
	Pending(ctx context.Context, p Partition) ([]Match, error)

	// Waiting lists the WAITING tickets of a (queue, region), ignoring
	// p.Shard (reconciliation).
	Waiting(ctx context.Context, p Partition) ([]Ticket, error)

	// LivePartitions lists the (queue, region)s that hold WAITING tickets
	// or PENDING_ACCEPT matches, by queue then region: whatever the
	// configuration in force, each must be served until they are resolved
	// (the Runner serves those no queue of its configuration covers).
	LivePartitions(ctx context.Context) ([]Partition, error)

	// DrainOutbox hands up to limit undelivered events older than minAge to
	// fn, oldest first; events fn accepts (returns nil) are deleted. Rows
	// being drained by another process are skipped, not waited for. The age
	// is judged by the clock that stamped the events (the ledger's), never
	// against the caller's.
	DrainOutbox(ctx context.Context, minAge time.Duration, limit int, fn func([]Event) error) (int, error)

	// DeleteEvents removes delivered events.
	DeleteEvents(ctx context.Context, ids []int64) error

	// LeaseEpoch returns the partition's recorded lease epoch, 0 if none.
	LeaseEpoch(ctx context.Context, partition string) (int64, error)

	// SetLeaseEpoch records the epoch (fencing token) of the partition's new
	// owner; CommitMatches then refuses every other epoch. It only grows:
	// an epoch not above the recorded one is refused with an error wrapping
	// ErrStaleEpoch, so two acquisitions handed the same token (a Redis
	// that lost its fencing counter) cannot both own the partition. Each
	// acquisition records its token once: the Runner never retries it, a
	// failed call gives the lease up and the next acquisition takes a new,
	// greater token.
	// It waits for commits holding the old epoch to finish.
	SetLeaseEpoch(ctx context.Context, partition string, epoch int64) error

	// Ping reports whether the ledger is reachable.
	Ping(ctx context.Context) error
}

// CommitResult is what Ledger.CommitMatches did with one match: Err is nil
// (Events were written) or tells why nothing of it was.
type CommitResult struct {
	Events []Event
	Err    error
}

// DissolveRequest asks Ledger.Dissolve to end a PENDING_ACCEPT match.
type DissolveRequest struct {
	MatchID string
	// Decliner is the user who declined; empty when the accept window
	// passed.
	Decliner string
	At       time.Time
}

// Dissolution is what Ledger.Dissolve did.
type Dissolution struct {
	Match Match // now DISSOLVED
	// Requeued are the tickets back in WAITING, with their original
	// enqueue time, head start and deadline: the caller returns them to
	// the pool with their original scores.
	Requeued []Ticket
	// Cancelled are the tickets that ended CANCELLED (declined,
	// accept_timeout or superseded).
	Cancelled []Ticket
}

// Reason is the match.dissolved reason: declined or accept_timeout.
func (r DissolveRequest) Reason() string {
	if r.Decliner != "" {
		return ReasonDeclined
	}
	return ReasonAcceptTimeout
}
