package engine

import (
	"context"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/pool"
)

// Pool is the live pool as the matcher uses it: exactly the operations
// Service, Engine, Runner and the reconciler call. matcher/pool's Redis pool
// (its Lua scripts) is the one a server runs; pool.Memory holds the same
// contract in memory. matcher/pool's contract_test.go is the contract's
// test suite, which both pass; the doc of each method is the Redis pool's.
//
// Every decision that depends on time is taken on the matcher's clock,
// never on Redis's: the calls that decide by time take the caller's now,
// and the ends of ticket hashes and claims' marks, whose calls take none,
// are judged by the clock the pool was given (pool.WithClock,
// pool.NewMemory), which the server sets to the same. A memory pool then
// runs on a virtual clock.
type Pool interface {
	// Joins and cancels.
	Enqueue(ctx context.Context, partition string, e matcher.Entry, ttl, timeout time.Duration) (bool, error)
	RemoveEntry(ctx context.Context, partitions []string, e matcher.Entry) (pool.RemoveResult, error)
	Heartbeat(ctx context.Context, partition, ticketID string, at time.Time, timeout time.Duration) (bool, error)
	HeartbeatAny(ctx context.Context, partitions []string, ticketID string, at time.Time, timeout time.Duration) (bool, error)

	// A matching pass: its reads and its claims, one round trip each.
	ScanMany(ctx context.Context, partition string, scans []pool.Scan) ([][]matcher.Entry, error)
	Oldest(ctx context.Context, partition string, n int) ([]matcher.Entry, error)
	Nearest(ctx context.Context, partition string, skill float64, n int) ([]matcher.Entry, error)
	Window(ctx context.Context, partition string, lo, hi float64, n int) ([]matcher.Entry, error)
	ClaimMany(ctx context.Context, partition string, fence int64, reqs []pool.ClaimRequest, then ...pool.Scan) ([]pool.Claimed, [][]matcher.Entry, error)
	Claim(ctx context.Context, partition string, fence int64, matchID string, entries []matcher.Entry) (pool.ClaimResult, error)

	// Putting tickets back, and the reconciler's repairs.
	Requeue(ctx context.Context, partition string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error)
	RequeueGuarded(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error)
	RequeueMissing(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error)
	Members(ctx context.Context, partition string) ([]matcher.Entry, error)
	Rewatch(ctx context.Context, partition string, es []matcher.Entry, timeout time.Duration) (int, error)
	DropLegacy(ctx context.Context, partition string) error
	Size(ctx context.Context, partition string) (int64, error)
	Sizes(ctx context.Context, partitions []string) ([]int64, error)
	Locate(ctx context.Context, partitions []string, ticketID string) (string, matcher.Entry, bool, error)

	// Sharded queues and adjacent regions.
	Promote(ctx context.Context, from, to string, cutoff time.Time, n int) ([]string, error)
	Offer(ctx context.Context, to, home string, entries []matcher.Entry, now, expiry time.Time) (int, error)
	Offers(ctx context.Context, partition string, now time.Time, n int) ([]matcher.Entry, error)
	WithdrawOffers(ctx context.Context, partition string, ticketIDs ...string) error

	// The pending index of accept windows.
	AddPending(ctx context.Context, partition string, ms ...pool.Pending) error
	RemovePending(ctx context.Context, partition string, matchIDs ...string) error
	PendingDue(ctx context.Context, partition string, now time.Time, n int) ([]string, error)

	// Partition leases, fenced, held until an expiry by the caller's now.
	AcquireLease(ctx context.Context, partition, owner string, now time.Time, ttl time.Duration, floor int64) (int64, error)
	RenewLease(ctx context.Context, partition, owner string, token int64, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, partition, owner string, token int64) (bool, error)

	// Per-user and per-partition memory.
	SetCooldown(ctx context.Context, queue, userID string, now time.Time, d time.Duration) error
	Cooldown(ctx context.Context, queue, userID string, now time.Time) (time.Duration, error)
	RememberSkill(ctx context.Context, userID string, skill float64) error
	LastSkill(ctx context.Context, userID string) (float64, bool, error)
	MarkAllocationFailure(ctx context.Context, partition string, now time.Time, ttl time.Duration) error
	AllocationFailing(ctx context.Context, partition string, now time.Time) (bool, error)

	// Wait statistics.
	RecordOutcomes(ctx context.Context, partition string, matchAts []time.Time, outcomes []pool.Outcome) error
	Stats(ctx context.Context, partition string) ([]pool.Outcome, []time.Time, error)
}

var _ Pool = (*pool.Pool)(nil)

var _ Pool = (*pool.Memory)(nil)
