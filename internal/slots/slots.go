// Package slots spreads periodic work over its period. Each key gets one
// of the slots when it is added, in turn, and a loop that visits one slot
// every Step visits every key once per period, each at a phase of its own,
// instead of all of them in one burst.
package slots

import (
	"context"
	"time"
)

// Set holds keys by slot. It is not safe for concurrent use: its owner
// holds its own lock around it.
type Set[K comparable] struct {
	slots  []map[K]struct{}
	period time.Duration
	next   int // the slot of the next key added
	n      int // keys held
}

// New returns a Set for work every period, of no more than most slots, fewer
// when period / most would be shorter than minStep (a short period, in
// tests, then wakes its loop no more often than minStep), and at least one.
func New[K comparable](period, minStep time.Duration, most int) *Set[K] {
	s := &Set[K]{slots: make([]map[K]struct{}, min(max(int(period/minStep), 1), most)), period: period}
	for i := range s.slots {
		s.slots[i] = make(map[K]struct{})
	}
	return s
}

// Len is the number of slots.
func (s *Set[K]) Len() int { return len(s.slots) }

// Count is the number of keys held.
func (s *Set[K]) Count() int { return s.n }

// Step is how often Visit visits the next slot, so that it visits each
// once per period.
func (s *Set[K]) Step() time.Duration {
	return s.period / time.Duration(len(s.slots))
}

// Visit calls visit with each slot in turn, one every Step, until ctx ends.
// visit runs without any lock of the Set's: its owner takes its own around
// the Set's methods, as everywhere.
func (s *Set[K]) Visit(ctx context.Context, visit func(slot int)) {
	t := time.NewTicker(s.Step())
	defer t.Stop()
	for slot := 0; ; slot = (slot + 1) % len(s.slots) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		visit(slot)
	}
}

// Add puts k, which must not be held, in the next slot in turn and returns
// that slot.
func (s *Set[K]) Add(k K) int {
	slot := s.next
	s.next = (s.next + 1) % len(s.slots)
	s.slots[slot][k] = struct{}{}
	s.n++
	return slot
}

// Remove takes k out of slot, the one Add returned; false when it was not
// there.
func (s *Set[K]) Remove(k K, slot int) bool {
	if _, ok := s.slots[slot][k]; !ok {
		return false
	}
	delete(s.slots[slot], k)
	s.n--
	return true
}

// Keys copies the keys of one slot.
func (s *Set[K]) Keys(slot int) []K {
	out := make([]K, 0, len(s.slots[slot]))
	for k := range s.slots[slot] {
		out = append(out, k)
	}
	return out
}

// All copies every key held.
func (s *Set[K]) All() []K {
	out := make([]K, 0, s.n)
	for _, slot := range s.slots {
		for k := range slot {
			out = append(out, k)
		}
	}
	return out
}
