package engine

import (
	"log/slog"
	"time"

	"github.com/matchgate/matchgate/matcher"
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
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics
}
