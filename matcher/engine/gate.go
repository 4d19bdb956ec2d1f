package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// The join of a queue behind an admission queue (ARCHITECTURE.md §10). A
// token authorizes exactly one join:
//
//   - it is claimed (READY → CLAIMED, one atomic change in the admission
//     record) before anything is written; a user who holds none is refused
//     ADMISSION_REQUIRED, naming the admission queue, unless they already
//     wait: that is ALREADY_QUEUED with their ticket, as in any queue;
//   - once the record holds the ticket it is consumed (CONSUMED, final),
//     whatever follows: an enqueue left to the reconciler, a ban's cancel;
//   - when the record refused the ticket (the user already waits, or is
//     seated in a match waiting for its accepts) it is released (READY
//     again), and the user may join with it again while it lives;
//   - when the record's answer is unknown (it failed or timed out, and the
//     ticket may have been written) it stays CLAIMED.
//
// A token left CLAIMED — that last case, a consume or release that failed,
// a process that died between the claim and the consume — authorizes
// nothing more: every claim of it is refused until its life (tokenTTL)
// ends and the admitter expires it. The ticket of such a join exists or
// not, as the record says. So a token never admits two tickets; a crash
// may cost its user the token, who enters the admission queue again once
// its life has ended.

// settleTimeout bounds the consume or release of a join's token. It runs
// beyond the join's own context, so that a caller gone does not leave the
// token claimed.
const settleTimeout = 2 * time.Second

// joinAdmitted is Join for a queue behind an admission queue.
func (s *Service) joinAdmitted(ctx context.Context, q *matcher.QueueConfig, region string, req matcher.JoinRequest, activity float64) (matcher.Ticket, error) {
	if s.cfg.Admission == nil {
		return matcher.Ticket{}, matcher.Errorf(matcher.CodeAdmissionRequired,
			"queue %s admits only players admitted by the admission queue %s, which this server does not serve", q.Name, q.Admission)
	}
	token, err := s.cfg.Admission.Claim(ctx, q.Admission, req.UserID)
	var refusal AdmissionRefusal
	switch {
	case errors.As(err, &refusal):
		return s.notAdmitted(ctx, q, req.UserID, refusal.NotAdmitted())
	case err != nil:
		code := matcher.CodeInternal
		if matcher.Transient(err) {
			code = matcher.CodeUnavailable
		}
		return matcher.Ticket{}, matcher.WithCause(code, "admission through "+q.Admission+" is unavailable; retry shortly",
			fmt.Errorf("join %s: claim the token of %s in %s: %w", q.Name, req.UserID, q.Admission, err))
	}
	t, recorded, err := s.recordJoin(ctx, q, region, req, activity)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	warn := func(msg string, err error) {
		s.log.Warn(msg, "queue", q.Name, "admission", q.Admission, "user", req.UserID, "err", err)
	}
	switch code := matcher.ErrorCode(err); {
	case recorded:
		if err := s.cfg.Admission.Consume(sctx, q.Admission, token); err != nil {
			warn("consume the admission token of a join; it stays claimed until its life ends", err)
		}
	case code == matcher.CodeAlreadyQueued || code == matcher.CodeAlreadyMatched:
		if err := s.cfg.Admission.Release(sctx, q.Admission, token); err != nil {
			warn("release the admission token of a refused join; it stays claimed until its life ends", err)
		}
	default:
		warn("join of unknown outcome; its admission token stays claimed until its life ends", err)
	}
	return t, err
}

// notAdmitted answers a join the gate refused: ADMISSION_REQUIRED, unless
// the user already waits (a repeated join whose first answer was lost,
// and which consumed the token): ALREADY_QUEUED with that ticket.
func (s *Service) notAdmitted(ctx context.Context, q *matcher.QueueConfig, userID, why string) (matcher.Ticket, error) {
	refused := matcher.Errorf(matcher.CodeAdmissionRequired, "queue %s admits only players admitted by the admission queue %s: %s", q.Name, q.Admission, why)
	// Since now: the waiting ticket, and next to no resolved ones.
	page, err := s.cfg.Ledger.UserState(ctx, userID, s.cfg.Now(), 2)
	if err != nil {
		s.log.Debug("read the waiting ticket of a user not admitted", "user", userID, "err", err)
		return matcher.Ticket{}, refused
	}
	for _, t := range page.Tickets {
		if t.Status == matcher.StatusWaiting {
			return t, alreadyQueued(t)
		}
	}
	return matcher.Ticket{}, refused
}
