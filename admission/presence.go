package admission

import (
	"context"
	"time"
)

// Presence: a waiter holds the place while a socket of theirs is open (the
// gateway's Touch, every few seconds) or while they poll (Position, Enter);
// one unseen for the queue's AbandonAfter is abandoned by the admitter.

// Touch records that userIDs, waiters of queue holding a socket, are
// present now. Users not waiting in the line are ignored.
func (s *Service) Touch(ctx context.Context, queue string, userIDs []string) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if len(userIDs) == 0 {
		return nil
	}
	return s.cfg.Line.Touch(ctx, q.Name, userIDs, s.cfg.Now())
}

// seen counts a poll of a WAITING place as presence; a new place needs
// none (Line.Add saw it), so Enter asks only for a repeat. Best effort: a
// failed touch fails no poll, and the next one or a socket's makes up for
// it.
func (s *Service) seen(ctx context.Context, queue string, p Place, repeat bool, now time.Time) {
	if !repeat || p.Status != StatusWaiting {
		return
	}
	if err := s.cfg.Line.Touch(ctx, queue, []string{p.UserID}, now); err != nil {
		s.log.Warn("record a poll as presence", "queue", queue, "user", p.UserID, "err", err)
	}
}
