package admission

import (
	"context"
	"time"
)

// Announcer tells the waiting room of an admission batch (the gateway's pushes).
type Announcer interface {
	// Admitted is told, once a batch's tokens are written and its places
	// acknowledged, the places made READY in it (Token and ExpiresAt set;
	// none when everyone taken had left meanwhile) and the queue's passed
	// counter after the batch (admission.Line): holders of ranks move them
	// on by it. It is best effort and must return promptly: it is called on
	// the admitter's pass, with a context that ends after announceTimeout,
	// and reports no error (a missed announcement is made good by the
	// pushes' periodic refresh and by polls).
	Admitted(ctx context.Context, queue string, ready []Place, passed int64)
}

// announceTimeout bounds an announcement, so a slow announcer (a publish to
// Redis) never holds up admitting by more than this.
const announceTimeout = 250 * time.Millisecond

// announce tells the Announcer, if any, of a batch that took anyone.
func (a *Admitter) announce(ctx context.Context, queue string, ready []Place, passed int64) {
	if a.cfg.Announce == nil {
		return
	}
	actx, cancel := context.WithTimeout(ctx, announceTimeout)
	defer cancel()
	a.cfg.Announce.Admitted(actx, queue, ready, passed)
}
