// Package admission is the waiting room of matchgate: a queue kind that
// admits its waiters at a global rate, in the order they entered, and gives
// each admitted user a one-use entry token for a protected downstream
// (ARCHITECTURE.md §10).
//
// The record (Record: PostgreSQL or memory) holds every place and token
// and is the truth; the line (Line: Redis or memory) is derived from it, in
// the record's order, and rebuilt from it after a loss. One admitter per
// queue, under a fenced lease, moves waiters from the line to a processing
// set, writes their tokens to the record, and then acknowledges them; a
// sweep returns the unacknowledged to their places.
package admission

import (
	"context"
	"errors"
	"time"
)

// Status is a place's state in the record.
type Status string

const (
	// StatusWaiting: in the line.
	StatusWaiting Status = "WAITING"
	// StatusReady: admitted, holding a token not yet claimed.
	StatusReady Status = "READY"
	// StatusClaimed: the protected downstream claimed the token and is
	// acting on it.
	StatusClaimed Status = "CLAIMED"
	// StatusConsumed: the protected action happened; final.
	StatusConsumed Status = "CONSUMED"
	// StatusExpired: the token's life ended unclaimed (or unconsumed);
	// final.
	StatusExpired Status = "EXPIRED"
	// StatusLeft: the user gave the place up; final.
	StatusLeft Status = "LEFT"
	// StatusAbandoned: no socket and no poll for abandonAfter; final.
	StatusAbandoned Status = "ABANDONED"
)

// Live reports whether a place in status s still holds the user's turn:
// a second entry returns it rather than making a new one.
func (s Status) Live() bool {
	return s == StatusWaiting || s == StatusReady || s == StatusClaimed
}

// A Place is one user's entry into one admission queue.
type Place struct {
	Queue  string
	UserID string
	// Seq is the queue's order: strictly increasing in the order the record
	// took the entries, whatever the gateways' clocks.
	Seq       int64
	Status    Status
	EnteredAt time.Time
	// Token and ExpiresAt are set once admitted.
	Token     string
	ExpiresAt time.Time
	// PredictedAt is when the admission was predicted at entry (the ETA
	// the user was first shown); AdmittedAt when it happened. Their
	// difference is the ETA's error.
	PredictedAt time.Time
	AdmittedAt  time.Time
	ClaimedAt   time.Time
	ConsumedAt  time.Time
	// Version grows with every change of the place, so a client keeps the
	// newest of the pushes it receives.
	Version int64
}

// Errors of the record, wrapped with context.
var (
	ErrNotFound       = errors.New("admission: not found")
	ErrAlreadyClaimed = errors.New("admission: token already claimed")
	ErrNotClaimed     = errors.New("admission: token not claimed")
	ErrStaleEpoch     = errors.New("admission: stale admitter epoch")
)

// An Admit is one waiter the admitter admits, with the token it gives.
type Admit struct {
	UserID string
	Seq    int64
	Token  string
}

// Record is the durable record of places and tokens.
type Record interface {
	// Enter records userID's place in queue at now unless the user holds a
	// live one there, which it returns with created false. predicted is
	// the admission the user is shown at entry.
	Enter(ctx context.Context, queue, userID string, now, predicted time.Time) (p Place, created bool, err error)
	// Place returns the user's newest place in queue (ErrNotFound).
	Place(ctx context.Context, queue, userID string) (Place, error)
	// Leave ends the user's WAITING or READY place as LEFT.
	Leave(ctx context.Context, queue, userID string, now time.Time) (Place, error)
	// Abandon ends the WAITING places of users as ABANDONED, returning
	// those it ended.
	Abandon(ctx context.Context, queue string, userIDs []string, now time.Time) ([]Place, error)
	// Admit makes each admit's place READY with its token, expiring at
	// now+ttl, if it is still WAITING, in one transaction checked against
	// the admitter's epoch (ErrStaleEpoch). It returns every admit's place
	// as it now is: one no longer WAITING is returned unchanged (an earlier
	// try admitted it, or the user left), so a retry never issues a second
	// token.
	Admit(ctx context.Context, queue string, epoch int64, admits []Admit, now time.Time, ttl time.Duration) ([]Place, error)
	// Claim moves a READY, unexpired token to CLAIMED (ErrAlreadyClaimed
	// when CLAIMED or CONSUMED; ErrNotFound when unknown or expired).
	Claim(ctx context.Context, queue, token string, now time.Time) (Place, error)
	// Consume ends a CLAIMED token as CONSUMED (ErrNotClaimed otherwise).
	Consume(ctx context.Context, queue, token string, now time.Time) (Place, error)
	// Release moves a CLAIMED token back to READY (ErrNotClaimed
	// otherwise): the protected action was rolled back.
	Release(ctx context.Context, queue, token string, now time.Time) (Place, error)
	// Expire ends up to limit READY or CLAIMED places whose token's life
	// ended by now as EXPIRED, returning them.
	Expire(ctx context.Context, queue string, now time.Time, limit int) ([]Place, error)
	// Waiting returns up to limit WAITING places of queue with Seq >
	// after, in Seq order: the line is rebuilt from them.
	Waiting(ctx context.Context, queue string, after int64, limit int) ([]Place, error)
	// SetEpoch records the admitter's lease epoch of queue; a lower one
	// than recorded is refused with ErrStaleEpoch.
	SetEpoch(ctx context.Context, queue string, epoch int64) error
	// Epoch is the admitter epoch recorded for queue (0 before any): the
	// floor of the next lease's token, so that a wiped Redis never issues
	// an old one again.
	Epoch(ctx context.Context, queue string) (int64, error)
	// Admitted returns the places admitted since, oldest first, up to
	// limit: the measured rate and the ETA's error come from them.
	Admitted(ctx context.Context, queue string, since time.Time, limit int) ([]Place, error)
}

// Taken is a waiter the admitter moved from the line to processing.
type Taken struct {
	UserID string
	Seq    int64
	// At is when it was taken, by the admitter's clock.
	At time.Time
}

// Rank is one waiter's place in the line, as Line.Ranks reads it.
type Rank struct {
	// Rank is the number of waiters ahead, Total the line's length.
	Rank, Total int64
	// OK is false when the user is not waiting in the line.
	OK bool
}

// Line is the live, derived line of each queue.
//
// Presence: the line knows when each waiter was last seen (a socket's
// Touch, a poll, the entry itself), by the callers' clocks; the admitter
// abandons the waiters unseen for the queue's AbandonAfter (Idle).
//
// Passed: each queue counts the waiters that have left the front of the
// line by Take, less those Return put back. Read with ranks (Ranks) it lets
// a holder of (rank0, passed0) estimate a later rank as rank0 - (passed -
// passed0) without asking the line again: the estimate ignores those who
// left from ahead (Remove) and is corrected by the next Ranks. The counter
// lives with the line and starts again from 0 when the line is lost: a
// passed below the one held (waiters returned, or the line rebuilt) is the
// sign to read the ranks again.
type Line interface {
	// Add puts places into the line at their Seq unless present (in the
	// line, processing, or already admitted since the last rebuild). A
	// place it adds is seen at now, and so is a waiter already in the line
	// who has no seen instant; one who has keeps it: a rebuild after a
	// loss of the line starts everyone's absence at the rebuild, and a
	// rebuild over an intact line changes nobody's.
	Add(ctx context.Context, queue string, places []Place, now time.Time) error
	// Rank returns the number of waiters ahead of userID and the line's
	// length; ok false when the user is not waiting in the line.
	Rank(ctx context.Context, queue, userID string) (rank, total int64, ok bool, err error)
	// Ranks returns the ranks of userIDs, index-aligned, with the passed
	// counter they go with; with no userIDs, the counter alone. A long list
	// is read in parts, each atomic; a take between parts is accounted for
	// by shifting the later parts to the first part's counter, so every
	// (rank, passed) pair estimates alike.
	Ranks(ctx context.Context, queue string, userIDs []string) (ranks []Rank, passed int64, err error)
	// Take moves up to n of the first waiters into processing, fenced by
	// token, admitting at most rate in any one-second window ending at
	// now (the admissions of the last second are kept in the line), and
	// returns them with the passed counter after the take.
	Take(ctx context.Context, queue string, fence int64, n, rate int, now time.Time) (taken []Taken, passed int64, err error)
	// Ack removes admitted waiters from processing.
	Ack(ctx context.Context, queue string, userIDs []string) error
	// Stale returns the waiters in processing taken before before.
	Stale(ctx context.Context, queue string, before time.Time) ([]Taken, error)
	// Return puts taken waiters back at their Seq, seen when they were
	// last seen before the take.
	Return(ctx context.Context, queue string, taken []Taken) error
	// Remove takes users out of the line (left, abandoned), presence and
	// all.
	Remove(ctx context.Context, queue string, userIDs []string) error
	// Touch records that those of userIDs waiting in the line were seen at
	// now; the others are ignored (never added). A seen instant only moves
	// forward.
	Touch(ctx context.Context, queue string, userIDs []string, now time.Time) error
	// Idle returns up to limit waiters of the line last seen before
	// before, the longest unseen first.
	Idle(ctx context.Context, queue string, before time.Time, limit int) ([]string, error)
	// Head returns up to n waiters from the front, in order, with their
	// seq: for abandonment checks and pushes.
	Head(ctx context.Context, queue string, n int) ([]Taken, error)
	// Size is the number of waiters in the line.
	Size(ctx context.Context, queue string) (int64, error)

	// The admitter's lease of a queue, as a partition's (ARCHITECTURE.md
	// §7.3): AcquireLease returns a fencing token greater than floor and
	// every token before, or 0 when another owner holds the lease at now;
	// Take refuses any token but the current one.
	AcquireLease(ctx context.Context, queue, owner string, now time.Time, ttl time.Duration, floor int64) (int64, error)
	RenewLease(ctx context.Context, queue, owner string, token int64, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, queue, owner string, token int64) (bool, error)
}

// ErrFenced is Take's refusal of a token that is not the lease's.
var ErrFenced = errors.New("admission: fencing token refused")
