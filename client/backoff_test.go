package client_test

import (
	"testing"
	"time"

	"github.com/matchgate/matchgate/client"
)

// The wait is within [0, min(cap, base·2^attempt)): the ceiling doubles per
// attempt up to the cap, and never overflows however many attempts failed.
func TestBackoffBounds(t *testing.T) {
	const base, cap = 500 * time.Millisecond, 15 * time.Second
	almostOne := func() float64 { return 0.999999 }
	zero := func() float64 { return 0 }
	ceilings := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, cap, cap}
	for attempt, ceiling := range ceilings {
		if d := client.Backoff(attempt, base, cap, zero); d != 0 {
			t.Errorf("attempt %d, random 0: %s, want 0", attempt, d)
		}
		hi := client.Backoff(attempt, base, cap, almostOne)
		if hi >= ceiling || hi < ceiling*99/100 {
			t.Errorf("attempt %d, random ~1: %s, want just under %s", attempt, hi, ceiling)
		}
		if half := client.Backoff(attempt, base, cap, func() float64 { return 0.5 }); half != ceiling/2 {
			t.Errorf("attempt %d, random 0.5: %s, want %s", attempt, half, ceiling/2)
		}
	}
	for _, attempt := range []int{40, 62, 63, 64, 1000, 1 << 30} {
		if d := client.Backoff(attempt, base, cap, almostOne); d <= 0 || d >= cap {
			t.Errorf("attempt %d: %s, want within (0, %s)", attempt, d, cap)
		}
	}
	// A random source out of [0, 1) cannot push the wait past the ceiling.
	if d := client.Backoff(0, base, cap, func() float64 { return 7 }); d < 0 || d >= base {
		t.Errorf("random 7: %s", d)
	}
	if d := client.Backoff(-3, base, cap, func() float64 { return 0.5 }); d != base/2 {
		t.Errorf("attempt -3: %s", d)
	}
}
