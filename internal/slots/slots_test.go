package slots

import (
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
		if s.Len() != c.want {
			t.Errorf("period %v: %d slots, want %d", c.period, s.Len(), c.want)
		}
		if step := s.Step(c.period); step*time.Duration(c.want) != c.period {
			t.Errorf("period %v: step %v over %d slots", c.period, step, c.want)
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
