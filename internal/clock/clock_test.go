package clock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/clock"
	"github.com/matchgate/matchgate/internal/redistest"
)

var t0 = time.UnixMilli(1755530400000).UTC()

// fakeWorld is a local clock the test moves and an authority some offset
// away from it that takes rtt to answer, half each way.
type fakeWorld struct {
	mu     sync.Mutex
	local  time.Time
	offset time.Duration   // authority - true local
	rtts   []time.Duration // round trip of each sample, in turn; the last repeats
	err    error
	calls  int
}

func (w *fakeWorld) Local() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.local
}

func (w *fakeWorld) advance(d time.Duration) {
	w.mu.Lock()
	w.local = w.local.Add(d)
	w.mu.Unlock()
}

func (w *fakeWorld) Source(context.Context) (time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rtt := w.rtts[min(w.calls, len(w.rtts)-1)]
	w.calls++
	w.local = w.local.Add(rtt / 2)
	at := w.local.Add(w.offset)
	w.local = w.local.Add(rtt - rtt/2)
	return at, w.err
}

// The offset is estimated at the midpoint of the quickest round trip, and
// cancels the skew of the local clock.
func TestSyncEstimatesOffsetAtTheQuickestMidpoint(t *testing.T) {
	w := &fakeWorld{local: t0, offset: 7 * time.Second,
		rtts: []time.Duration{40 * time.Millisecond, 2 * time.Millisecond, 30 * time.Millisecond}}
	c := clock.New(clock.Config{Source: w.Source, Local: w.Local, Skew: -5 * time.Second, Samples: 3})
	if got := c.Now(); !got.Equal(t0.Add(-5 * time.Second)) {
		t.Fatalf("before a sync Now = %v, want the skewed local clock %v", got, t0.Add(-5*time.Second))
	}
	if err := c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Offset(), 12*time.Second; got != want {
		t.Fatalf("offset %v, want %v (authority 7 s ahead of a clock skewed 5 s behind)", got, want)
	}
	want := w.Local().Add(7 * time.Second)
	if got := c.Now(); !got.Equal(want) {
		t.Fatalf("Now %v, want the authority's %v", got, want)
	}
	// A slow sample's midpoint may be far from when the authority read its
	// clock (here its answer took a second to come back): the quick one wins.
	w2 := &fakeWorld{local: t0, offset: time.Second, rtts: []time.Duration{time.Millisecond}}
	c2 := clock.New(clock.Config{Source: func(ctx context.Context) (time.Time, error) {
		at, err := w2.Source(ctx)
		if w2.calls == 1 {
			w2.advance(time.Second) // a slow answer's way back: no midpoint any more
		}
		return at, err
	}, Local: w2.Local, Samples: 2})
	if err := c2.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c2.Offset(); got != time.Second {
		t.Fatalf("offset %v after one slow asymmetric sample and one quick one, want 1s (the quick one's)", got)
	}
}

// Later corrections slew: Now never goes backwards, even when the
// authority turns out to be behind, and the offset reaches the new value.
func TestNowIsMonotonicAcrossCorrections(t *testing.T) {
	w := &fakeWorld{local: t0, offset: 3 * time.Second, rtts: []time.Duration{0}}
	c := clock.New(clock.Config{Source: w.Source, Local: w.Local, Samples: 1})
	if err := c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	prev := c.Now()
	backwards := 0
	for i := range 2000 {
		if i%100 == 0 {
			// The authority moves by up to ±2 s between syncs.
			w.mu.Lock()
			w.offset = time.Duration(i%700-350) * 6 * time.Millisecond
			w.mu.Unlock()
			if err := c.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		w.advance(7 * time.Millisecond)
		now := c.Now()
		if now.Before(prev) {
			backwards++
		}
		prev = now
	}
	if backwards != 0 {
		t.Fatalf("Now went backwards %d times of 2000", backwards)
	}
	// A correction is reached once the slew had time for it.
	w.mu.Lock()
	w.offset = -2 * time.Second
	w.mu.Unlock()
	if err := c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	from := c.Offset()
	w.advance(time.Minute)
	if got, want := c.Offset(), from-time.Minute/20; from+2*time.Second <= 3*time.Second || got != want {
		t.Fatalf("offset %v a minute after a correction from %v to -2s, want %v (slewed by 3 s a minute)", got, from, want)
	}
	w.advance(2 * time.Minute)
	if got := c.Offset(); got != -2*time.Second {
		t.Fatalf("offset %v three minutes after a correction to -2s", got)
	}
}

// A failed sync keeps the last offset, counts and, in Run, logs.
func TestSyncFailureKeepsTheLastOffset(t *testing.T) {
	w := &fakeWorld{local: t0, offset: 4 * time.Second, rtts: []time.Duration{time.Millisecond}}
	var logs bytes.Buffer
	var mu sync.Mutex
	reg := prometheus.NewRegistry()
	c := clock.New(clock.Config{Source: w.Source, Local: w.Local, Every: time.Millisecond, Samples: 2,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil)), Metrics: reg})
	if err := c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.err, w.offset = errors.New("LOADING"), time.Hour
	w.mu.Unlock()
	if err := c.Sync(context.Background()); err == nil || !strings.Contains(err.Error(), "LOADING") {
		t.Fatalf("failed sync returned %v", err)
	}
	if got := c.Offset(); got != 4*time.Second {
		t.Fatalf("offset %v after a failed sync, want the last one (4s)", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		logged := strings.Contains(logs.String(), "clock sync failed")
		mu.Unlock()
		if logged {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run logged no failed sync")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := c.Offset(); got != 4*time.Second {
		t.Fatalf("offset %v after failed syncs in Run, want 4s", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "matchgate_clock_sync_errors_total" {
			counted = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if counted < 2 {
		t.Fatalf("sync errors counted %v, want at least 2 (one Sync, one in Run)", counted)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Against a real Redis and the embedded one, clocks skewed 5 s either way
// agree within a few milliseconds once synchronized.
func TestRedisTimeCancelsSkew(t *testing.T) {
	redistest.Both(t, func(t *testing.T, rdb *redis.Client, _ string) {
		ahead := clock.New(clock.Config{Source: clock.RedisTime(rdb), Skew: 5 * time.Second})
		behind := clock.New(clock.Config{Source: clock.RedisTime(rdb), Skew: -5 * time.Second})
		for _, c := range []*clock.Synced{ahead, behind} {
			if err := c.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if d := ahead.Now().Sub(behind.Now()).Abs(); d > 500*time.Millisecond {
			t.Fatalf("synchronized clocks skewed ±5 s differ by %v", d)
		}
	})
}

// Now stays monotonic for each caller while syncs correct the offset
// concurrently, both ways.
func TestNowIsMonotonicUnderConcurrentSyncs(t *testing.T) {
	w := &fakeWorld{local: t0, offset: time.Second, rtts: []time.Duration{time.Millisecond}}
	c := clock.New(clock.Config{Source: w.Source, Local: w.Local, Samples: 1})
	var wg sync.WaitGroup
	backwards := make([]int, 4)
	for g := range backwards {
		wg.Go(func() {
			prev := c.Now()
			for range 5000 {
				now := c.Now()
				if now.Before(prev) {
					backwards[g]++
				}
				prev = now
			}
		})
	}
	wg.Go(func() {
		for i := range 2000 {
			w.mu.Lock()
			w.offset = time.Duration(i%2*2-1) * time.Duration(i) * time.Millisecond
			w.mu.Unlock()
			w.advance(time.Millisecond)
			if err := c.Sync(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	for g, n := range backwards {
		if n != 0 {
			t.Errorf("caller %d saw Now go backwards %d times", g, n)
		}
	}
}
