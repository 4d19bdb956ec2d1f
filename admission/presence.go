package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"
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

// Ranks returns the places of userIDs in queue, index-aligned, for the
// refresh of pushed positions: WAITING with rank, total and ETA for those
// waiting in the line, Status "" for the others (admitted, gone, or
// between the line and the record). The ranks come from the line alone:
// Version is not read (0). passed is the line's counter they go with
// (Line.Ranks): with it a holder estimates later ranks without a call.
func (s *Service) Ranks(ctx context.Context, queue string, userIDs []string) ([]Position, int64, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, 0, err
	}
	ranks, passed, err := s.cfg.Line.Ranks(ctx, q.Name, userIDs)
	if err != nil {
		return nil, 0, err
	}
	if len(ranks) != len(userIDs) {
		return nil, 0, fmt.Errorf("ranks in %s: %d ranks for %d users", q.Name, len(ranks), len(userIDs))
	}
	rates := s.ratesAhead(ctx, q, s.cfg.Now())
	out := make([]Position, len(ranks))
	for i, r := range ranks {
		if !r.OK {
			continue
		}
		eta := rates.Predict(r.Rank)
		out[i] = Position{Status: StatusWaiting, Rank: r.Rank, Total: r.Total, ETA: eta, PollAfter: pollAfter(eta, q)}
	}
	return out, passed, nil
}

// QueuePlace is a user's live place in one admission queue.
type QueuePlace struct {
	Queue    string
	Position Position
}

// Places returns the user's live places (WAITING or READY) across every
// admission queue, by queue name, for the hello frame. Reading them counts
// as presence, as a poll does: the user has just connected.
func (s *Service) Places(ctx context.Context, userID string) ([]QueuePlace, error) {
	var out []QueuePlace
	for _, name := range s.queueNames() {
		pos, err := s.Position(ctx, name, userID)
		if err != nil {
			return nil, err
		}
		if pos.Status != "" {
			out = append(out, QueuePlace{Queue: name, Position: pos})
		}
	}
	return out, nil
}

// queueNames are the admission queues' names, sorted.
func (s *Service) queueNames() []string {
	return slices.Sorted(maps.Keys(s.qs.Load().byName))
}
