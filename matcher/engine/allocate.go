package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Allocator hands out game servers. The engine asks for one after the claim
// and before the commit, so the match row is written together with the
// address its players will use; a failed commit (one the record proves
// unwritten: a commit whose reply was lost may have landed) or a dissolved
// match gives the server back. Implementations: allocator.Static
// (a fixed fleet, the embedded default) and allocator.HTTP (a fleet manager
// behind the JSON protocol of docs/ALLOCATOR.md).
type Allocator interface {
	// Allocate returns a ready server in req.Region, and never one in
	// another region: a player who queued in one region is not silently
	// sent to another. It may be called again for the same match id after
	// a failure and should then answer the same server if it had one.
	Allocate(ctx context.Context, req AllocationRequest) (matcher.Server, error)
	// Release gives a server back: its match will not be played (the
	// record holds no commit of it, or the match dissolved in its accept
	// window).
	Release(ctx context.Context, matchID string, s matcher.Server) error
}

// AllocationRequest describes the match a server is wanted for.
type AllocationRequest struct {
	MatchID string
	Queue   string
	Region  string
	Players []matcher.Player
	Bots    int
}

// DefaultAllocateBackoff are the waits between the attempts of one
// allocation: three attempts, 50 ms then 100 ms apart, within the region.
var DefaultAllocateBackoff = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}

// allocateTimeout bounds one attempt when the allocator itself has no
// deadline of its own.
const allocateTimeout = 2 * time.Second

// errNoServer is what an allocation that answered no address amounts to.
var errNoServer = errors.New("allocator answered no server address")

// allocate asks for a server, retrying in the same region after each wait
// of backoff; it returns the last error when every attempt failed.
func allocate(ctx context.Context, a Allocator, req AllocationRequest, backoff []time.Duration,
	sleep func(context.Context, time.Duration) error) (matcher.Server, error) {
	var last error
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, allocateTimeout)
		s, err := a.Allocate(actx, req)
		cancel()
		if err == nil && s.Address == "" {
			err = errNoServer
		}
		if err == nil {
			if s.Session == "" {
				s.Session = req.MatchID
			}
			return s, nil
		}
		last = err
		if attempt >= len(backoff) {
			return matcher.Server{}, fmt.Errorf("allocate a server in %s for match %s (%d attempts): %w", req.Region, req.MatchID, attempt+1, last)
		}
		if err := sleep(ctx, backoff[attempt]); err != nil {
			return matcher.Server{}, fmt.Errorf("allocate a server in %s for match %s: %w (after %v)", req.Region, req.MatchID, err, last)
		}
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
