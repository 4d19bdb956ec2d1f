package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/provider"
)

// Deps are the dependencies the Service, the Engine and the lease Runner
// (which builds engines) share: one set, built once by the server
// (ARCHITECTURE.md §1).
type Deps struct {
	Pool   Pool
	Ledger matcher.Ledger
	// Allocator hands out a server for every match before it is committed,
	// and takes back the server of a dissolved match; nil forms matches
	// without a server (tests and tools).
	Allocator Allocator
	// Notifier publishes committed events at once; nil leaves them to the
	// relay.
	Notifier Notifier
	// Presence tells when users were last seen with a live socket; with it a
	// ticket whose player has a socket is never evicted as a ghost. Nil:
	// only heartbeats count. The Service does not read it.
	Presence Presence
	// Now is the clock of every decision (ARCHITECTURE.md §7.6); nil means
	// time.Now.
	// Providers and Assignments are the provider queues' live pool and
	// record of assignments (providers.go); nil forms no match in a
	// provider queue.
	Providers   provider.Live
	Assignments provider.Record
	Now         func() time.Time
	Logger      *slog.Logger
	Metrics     *Metrics
}

// AdmissionGate admits the joins of a queue behind an admission queue
// (matcher.QueueConfig.Admission, ARCHITECTURE.md §10): the Service claims
// the user's token before the join, consumes it once the ticket is
// recorded and releases it when the record refused the ticket, so that a
// token authorizes exactly one join.
type AdmissionGate interface {
	// Claim finds the user's READY, unexpired token in admissionQueue and
	// claims it, atomically: of two claims of one token, one wins. A user
	// who holds none is refused with an error holding an
	// AdmissionRefusal; any other error is a failure.
	Claim(ctx context.Context, admissionQueue, userID string) (token string, err error)
	// Consume ends a claimed token: its join was recorded.
	Consume(ctx context.Context, admissionQueue, token string) error
	// Release gives a claimed token back: its join was refused.
	Release(ctx context.Context, admissionQueue, token string) error
}

// AdmissionRefusal is an AdmissionGate's refusal, anywhere in the chain of
// Claim's error: NotAdmitted says why, in words for the player.
type AdmissionRefusal interface{ NotAdmitted() string }
