package slots

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestSlotCount(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		want   int
	}{
		{20 * time.Second, 100},      // capped at most
		{200 * time.Millisecond, 20}, // no step below minStep
		{time.Millisecond, 1},        // at least one
	} {
		s := New[int](c.period, 10*time.Millisecond, 100)
		if step := s.Step(); step != c.period/time.Duration(c.want) {
			t.Errorf("period %v: step %v, want %d slots of %v", c.period, step, c.want, c.period/time.Duration(c.want))
		}
	}
}

// Keys are dealt to the slots in turn, each slot lists its own, and a
// removal takes a key out of its slot only.
func TestAddRemove(t *testing.T) {
	s := New[string](time.Second, time.Millisecond, 3)
	got := map[string]int{}
	for _, k := range []string{"a", "b", "c", "d"} {
		got[k] = s.Add(k)
	}
	if want := map[string]int{"a": 0, "b": 1, "c": 2, "d": 0}; !maps.Equal(got, want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	keys := s.Keys(0)
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a", "d"}) {
		t.Fatalf("slot 0 holds %v", keys)
	}
	if s.Remove("a", 1) || !s.Remove("a", 0) || s.Remove("a", 0) {
		t.Fatal("remove from the wrong slot, or twice")
	}
	if s.Count() != 3 {
		t.Fatalf("count %d, want 3", s.Count())
	}
	all := s.All()
	slices.Sort(all)
	if !slices.Equal(all, []string{"b", "c", "d"}) {
		t.Fatalf("all = %v", all)
	}
}

// Visit goes round the slots in order, one a Step, and returns when its
// context ends.
func TestVisit(t *testing.T) {
	s := New[int](30*time.Millisecond, 10*time.Millisecond, 3)
	ctx, cancel := context.WithCancel(context.Background())
	var got []int
	s.Visit(ctx, func(slot int) {
		if got = append(got, slot); len(got) == 5 {
			cancel()
		}
	})
	if want := []int{0, 1, 2, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("visited %v, want %v", got, want)
	}
}
