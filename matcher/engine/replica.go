package engine

import (
	"context"
	"errors"
	"log/slog"

	"github.com/matchgate/matchgate/matcher"
)

// replicaReads reads a replica of the record, and the primary for what the
// replica does not have yet (it lags behind the commits) or cannot answer
// (it is away): a reader is never told less than the primary would tell.
type replicaReads struct {
	replica, primary RecordReads
	log              *slog.Logger
}

// again tells whether an answer of the replica is to be asked of the
// primary: a not found, or an error. The caller's own end is not.
func (r replicaReads) again(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if !errors.Is(err, matcher.ErrNotFound) {
		r.log.Warn("record replica: read failed; asking the primary", "err", err)
	}
	return true
}

func (r replicaReads) Ticket(ctx context.Context, id string) (matcher.Ticket, error) {
	t, err := r.replica.Ticket(ctx, id)
	if r.again(ctx, err) {
		return r.primary.Ticket(ctx, id)
	}
	return t, err
}

func (r replicaReads) Match(ctx context.Context, id string) (matcher.Match, error) {
	m, err := r.replica.Match(ctx, id)
	if r.again(ctx, err) {
		return r.primary.Match(ctx, id)
	}
	return m, err
}

// UserTickets asks the primary only when the replica fails: an empty page
// from a lagging replica is still a page, older than the primary's by its
// lag (docs/OPERATIONS.md says how to run a standby that does not lag).
func (r replicaReads) UserTickets(ctx context.Context, userID string, before matcher.TicketCursor, limit int) (matcher.TicketPage, error) {
	p, err := r.replica.UserTickets(ctx, userID, before, limit)
	if err != nil && r.again(ctx, err) {
		return r.primary.UserTickets(ctx, userID, before, limit)
	}
	return p, err
}
