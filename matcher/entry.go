package matcher

import (
	"math"
	"sort"
	"time"
)

// Entry is one waiting ticket as the pool holds it and the planners choose from it. An entry read from a
// member that is a bare ticket id (the layout before members carried the
// fields) has its TicketID alone, an empty UserID: the caller restores it
// from the record.
type Entry struct {
	TicketID string
	UserID   string
	// Name is the ticket's display name. The pool keeps it in the ticket's
	// hash, not in its member: only an enqueue, a requeue and a claim carry
	// it (ClaimResult.Names), the scans leave it "".
	Name      string
	Skill     float64
	Activity  float64
	Estimated bool
	Enqueue   time.Time // effective enqueue time (wait-order clock), ms precision
	Deadline  time.Time // ms precision
	// Heartbeat is the last sign of life, zero when there was none. Only
	// the reads that need it fill it (the watch scan, which gives the
	// enqueue time for none, Offers and Locate); the others leave it zero.
	Heartbeat time.Time
	// Home is, for an entry read from another partition's offers, the
	// partition the ticket waits in; "" for the partition's own entries.
	Home string
}

// Closest returns the n of es closest in skill to skill, ordered by
// distance, ties by enqueue time then ticket id (a stable order): the order
// Nearest returns. es is not changed.
func Closest(es []Entry, skill float64, n int) []Entry {
	return ClosestFunc(es, skill, n, nil)
}

// ClosestFunc is Closest over the entries keep accepts (all when keep is
// nil). It selects without copying or sorting es: a pass that holds the
// whole pool picks each anchor's candidates from it, and a copy and a sort
// of the pool per anchor were 4% of the server's allocations offered 5,000
// joins/s.
func ClosestFunc(es []Entry, skill float64, n int, keep func(Entry) bool) []Entry {
	out := make([]Entry, 0, max(0, min(n, len(es))))
	if n <= 0 {
		return out
	}
	closer := func(a, b Entry) bool {
		da, db := math.Abs(a.Skill-skill), math.Abs(b.Skill-skill)
		if da != db {
			return da < db
		}
		if !a.Enqueue.Equal(b.Enqueue) {
			return a.Enqueue.Before(b.Enqueue)
		}
		return a.TicketID < b.TicketID
	}
	for _, e := range es {
		if keep != nil && !keep(e) {
			continue
		}
		if len(out) == n && !closer(e, out[n-1]) {
			continue
		}
		// After every entry it is not closer than: equal ones keep their
		// order in es.
		i := sort.Search(len(out), func(i int) bool { return closer(e, out[i]) })
		if len(out) < n {
			out = append(out, Entry{})
		}
		copy(out[i+1:], out[i:len(out)-1])
		out[i] = e
	}
	return out
}

// EntryOf is the pool entry of a ticket, with its original scores.
func EntryOf(t Ticket) Entry {
	return Entry{
		TicketID: t.ID, UserID: t.UserID, Name: t.Name, Skill: t.Skill, Activity: t.Activity, Estimated: t.Estimated,
		Enqueue: t.EffectiveEnqueue(), Deadline: t.Deadline, Heartbeat: t.EnqueuedAt,
	}
}

// EntryTTL is the safety-net expiry of a ticket's hash in the pool: ten
// minutes past its deadline, at least a minute. Nothing decides by it: a
// pass resolves the ticket at its deadline (ARCHITECTURE.md §7.6).
func EntryTTL(now, deadline time.Time) time.Duration {
	ttl := deadline.Sub(now) + 10*time.Minute
	if ttl < time.Minute {
		ttl = time.Minute
	}
	return ttl
}
