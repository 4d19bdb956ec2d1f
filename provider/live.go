package provider

import (
	"context"
	"errors"
	"time"
)

// Live is the live state of a provider queue's providers: who is online,
// with which capacity and attributes, and which assignments hold their
// slots. It is derived data, in Redis for a server (provider/pool) and in
// memory for tests and the simulator; every change is atomic (one script
// on Redis). The Record stays the truth of assignments: Sync rebuilds a
// provider's held slots from it after Redis forgot them.
//
// A provider is online while a session holds it and its presence is fresh:
// Online and Refresh set "seen until", and a provider not refreshed by then
// counts as offline (its gateway died without a word). Offline names the
// session, so that a late close on one node never takes offline a provider
// who reconnected to another.
type Live interface {
	// Online puts p.UserID online in queue with p.Capacity (≥ 0) and
	// p.Attributes, held by session and seen until `until`; the slots it
	// already holds stay held. It returns the provider as now stored.
	Online(ctx context.Context, queue string, p Provider, session string, until time.Time) (Provider, error)
	// Update changes the capacity (when capacity ≥ 0) and the attributes
	// (when attrs is not nil) of an online provider; ErrOffline otherwise.
	// A capacity below the slots held takes no new assignment until enough
	// end; none is taken away.
	Update(ctx context.Context, queue, userID string, capacity int, attrs *Attributes, now time.Time) (Provider, error)
	// Offline takes userID offline if session is "" or the session that
	// put it online; false when another session holds it or it was not
	// online. Its held slots stay held until their assignments end.
	Offline(ctx context.Context, queue, userID, session string, now time.Time) (bool, error)
	// Refresh extends "seen until" for each of userIDs still held by
	// session (the gateway's periodic refresh of the providers it holds).
	Refresh(ctx context.Context, queue string, userIDs []string, session string, until time.Time) error
	// Hold takes one of userID's slots for assignmentID if the provider is
	// online at now (seen until after now) and holds fewer than its
	// capacity; false otherwise. Holding an id already held is true.
	Hold(ctx context.Context, queue, userID, assignmentID string, now time.Time) (bool, error)
	// Release frees the slot assignmentID holds; one not held is no error.
	Release(ctx context.Context, queue, userID, assignmentID string) error
	// Snapshot lists the providers of queue the pool knows, online or not,
	// by user id; Online is judged at now.
	Snapshot(ctx context.Context, queue string, now time.Time) ([]Provider, error)
	// Get returns one provider; ok false when the pool does not know it.
	Get(ctx context.Context, queue, userID string, now time.Time) (p Provider, ok bool, err error)
	// Sync sets userID's held slots to exactly ids (rebuilt from the
	// record), creating an offline provider when the pool does not know it.
	Sync(ctx context.Context, queue, userID string, ids []string) error
}

// ErrOffline: the provider is not online in the queue.
var ErrOffline = errors.New("provider: not online")

// State is a provider in one queue and its live assignments (a provider's
// hello).
type State struct {
	Queue       string
	Provider    Provider
	Known       bool // the live pool knows the provider
	Assignments []Assignment
}

// Presence is a provider queue's providers as the live pool holds them.
type Presence struct {
	Queue                 string
	Online, Busy, Offline []Provider // busy: online, every slot held
	Used, Capacity        int        // slots held and offered by the online
}
