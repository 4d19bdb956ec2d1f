package admission

import (
	"context"
	"errors"
	"fmt"
)

// Gate is the Service as the gate of a matchmaking queue behind an
// admission queue (ARCHITECTURE.md §10): a join claims the user's READY
// token, consumes it once its ticket is recorded and releases it when the
// join was refused, so that one token authorizes one join. The client
// sends no token: the gate finds the user's place.
type Gate struct{ s *Service }

// Gate returns the Service's gate.
func (s *Service) Gate() *Gate { return &Gate{s: s} }

// NotAdmittedError is the gate's refusal of a user who holds no READY,
// unexpired token in Queue.
type NotAdmittedError struct {
	Queue string
	// Status is the user's newest place's, "" when there is none. A READY
	// place here is one whose token's life ended; CLAIMED, one whose token
	// another join (or the protected downstream) holds.
	Status Status
}

func (e *NotAdmittedError) Error() string {
	return "admission: no READY token in " + e.Queue + ": " + e.NotAdmitted()
}

// NotAdmitted says why, in words a player can act on. The method marks
// the refusal for consumers that do not import this package: the
// matchmaking engine knows it by it.
func (e *NotAdmittedError) NotAdmitted() string {
	switch e.Status {
	case "":
		return "enter " + e.Queue + " and join once admitted"
	case StatusWaiting:
		return "your place in " + e.Queue + " is still waiting; join once admitted"
	case StatusClaimed:
		return "your token of " + e.Queue + " is in use by another join"
	case StatusConsumed:
		return "your token of " + e.Queue + " was used; enter " + e.Queue + " again"
	case StatusReady, StatusExpired:
		return "your token of " + e.Queue + " expired; enter " + e.Queue + " again"
	}
	return "your place in " + e.Queue + " ended; enter " + e.Queue + " again"
}

// Claim claims the READY, unexpired token of the user's newest place in
// queue and returns it. A user who holds none is refused with a
// *NotAdmittedError; of two claims of one token (two joins at once) the
// record lets exactly one win, and the other is refused so.
func (g *Gate) Claim(ctx context.Context, queue, userID string) (string, error) {
	q, err := g.s.queue(queue)
	if err != nil {
		return "", err
	}
	p, err := g.s.cfg.Record.Place(ctx, q.Name, userID)
	switch {
	case errors.Is(err, ErrNotFound):
		return "", &NotAdmittedError{Queue: q.Name}
	case err != nil:
		return "", fmt.Errorf("place of %s in %s: %w", userID, q.Name, err)
	}
	now := g.s.cfg.Now()
	if p.Status != StatusReady || !now.Before(p.ExpiresAt) {
		return "", &NotAdmittedError{Queue: q.Name, Status: p.Status}
	}
	_, err = g.s.cfg.Record.Claim(ctx, q.Name, p.Token, now)
	switch {
	case errors.Is(err, ErrAlreadyClaimed):
		// Claimed since the read: by a concurrent join, or the downstream.
		return "", &NotAdmittedError{Queue: q.Name, Status: StatusClaimed}
	case errors.Is(err, ErrNotFound):
		// Its life ended since the read, by the record's judgement.
		return "", &NotAdmittedError{Queue: q.Name, Status: StatusExpired}
	case err != nil:
		return "", fmt.Errorf("claim the token of %s in %s: %w", userID, q.Name, err)
	}
	return p.Token, nil
}

// Consume ends a claimed token: its join was recorded.
func (g *Gate) Consume(ctx context.Context, queue, token string) error {
	_, err := g.s.Consume(ctx, queue, token)
	return err
}

// Release gives a claimed token back to READY: its join was refused, and
// the user may join again with it while it lives.
func (g *Gate) Release(ctx context.Context, queue, token string) error {
	_, err := g.s.Release(ctx, queue, token)
	return err
}
