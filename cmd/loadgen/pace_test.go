package main

import (
	"context"
	"testing"
	"time"
)

// fakeClock is a clock that only moves when the pacer sleeps.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time                           { return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) { c.t = c.t.Add(d) }

func TestPacerDue(t *testing.T) {
	p := pacer{rate: 2000}
	for _, c := range []struct {
		elapsed time.Duration
		want    int
	}{{-time.Millisecond, 0}, {0, 1}, {499 * time.Microsecond, 1}, {500 * time.Microsecond, 2}, {time.Second, 2001}} {
		if got := p.due(c.elapsed); got != c.want {
			t.Errorf("due(%v) = %d, want %d", c.elapsed, got, c.want)
		}
	}
	if got := (pacer{rate: 10, total: 3}).due(time.Hour); got != 3 {
		t.Errorf("due is capped by total: got %d", got)
	}
	if got := p.offset(2000); got != time.Second {
		t.Errorf("offset(2000) at 2000/s = %v", got)
	}
}

func TestPacerRunIssuesTheRateOverTheDuration(t *testing.T) {
	for _, rate := range []float64{7, 500, 5000} {
		clk := &fakeClock{t: time.Unix(1000, 0)}
		p := pacer{rate: rate, now: clk.now, sleep: clk.sleep, minStep: time.Millisecond}
		start := clk.t
		var dues []time.Time
		n := p.run(context.Background(), start, start.Add(2*time.Second), func(i int, due time.Time) {
			if i != len(dues) {
				t.Fatalf("fire(%d) after %d events", i, len(dues))
			}
			// Never early, and never more than one step late.
			if clk.t.Before(due) || clk.t.Sub(due) > time.Millisecond+time.Duration(float64(time.Second)/rate) {
				t.Fatalf("event %d due %v fired at %v", i, due.Sub(start), clk.t.Sub(start))
			}
			dues = append(dues, due)
		})
		if want := int(2 * rate); n != want || len(dues) != want {
			t.Errorf("rate %v over 2s issued %d, want %d", rate, n, want)
		}
	}
}

func TestPacerRunStopsAtTotal(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := pacer{rate: 100, total: 25, now: clk.now, sleep: clk.sleep}
	n := p.run(context.Background(), clk.t, clk.t.Add(time.Hour), func(int, time.Time) {})
	if n != 25 || clk.t.Sub(time.Unix(0, 0)) > 250*time.Millisecond {
		t.Fatalf("issued %d by %v, want 25 by 240ms", n, clk.t.Sub(time.Unix(0, 0)))
	}
}

func TestPacerCatchesUpAfterAStall(t *testing.T) {
	// Open model: events that fell due while the caller was stalled are
	// issued at once, not dropped and not postponed.
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := pacer{rate: 1000, now: clk.now, sleep: clk.sleep}
	start := clk.t
	stalled := false
	n := p.run(context.Background(), start, start.Add(time.Second), func(i int, _ time.Time) {
		if i == 100 && !stalled {
			stalled = true
			clk.t = clk.t.Add(300 * time.Millisecond)
		}
	})
	if n != 1000 {
		t.Fatalf("issued %d, want 1000", n)
	}
}
