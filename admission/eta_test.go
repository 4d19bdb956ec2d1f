package admission

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

func every(from time.Time, n int, gap time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = from.Add(time.Duration(i) * gap)
	}
	return out
}

func TestMeasureRatesFromAdmissionsNotTheConfiguredRate(t *testing.T) {
	now := t0.Add(time.Hour)
	// 20 a second for the whole window, configured 50.
	r := MeasureRates(every(now.Add(-RateWindow), 1200, 50*time.Millisecond), now, 50)
	if !r.Measured || math.Abs(r.Mean-20) > 0.5 {
		t.Fatalf("rates %+v, want a measured 20/s", r)
	}
	if e := r.Predict(99); math.Abs(e.Seconds-5) > 0.2 {
		t.Fatalf("eta %+v for rank 99 at 20/s, want 5 s", e)
	}
	// Nothing admitted yet: the configured rate stands in, said so.
	r = MeasureRates(nil, now, 50)
	if r.Measured || r.Mean != 50 {
		t.Fatalf("rates %+v, want the configured 50 unmeasured", r)
	}
}

func TestMeasureRatesWidensWhileTheRateChanges(t *testing.T) {
	now := t0.Add(time.Hour)
	// 10/s in the first half of the window, 40/s in the second.
	at := append(every(now.Add(-RateWindow), 300, 100*time.Millisecond),
		every(now.Add(-RateWindow/2), 1200, 25*time.Millisecond)...)
	r := MeasureRates(at, now, 50)
	if math.Abs(r.Low-10) > 0.5 || math.Abs(r.High-40) > 0.5 || r.Mean < r.Low || r.Mean > r.High {
		t.Fatalf("rates %+v, want low 10 high 40 and the mean between", r)
	}
	e := r.Predict(399)
	if !(e.Low < e.Seconds && e.Seconds < e.High) || math.Abs(e.Low-10) > 0.5 || math.Abs(e.High-40) > 1 {
		t.Fatalf("eta %+v, want 10 s to 40 s around the mean", e)
	}
}

func TestMeasureRatesOfAQueueThatJustStarted(t *testing.T) {
	now := t0.Add(time.Hour)
	// 5 s of admissions at 50/s: measured over those 5 s, not the minute.
	r := MeasureRates(every(now.Add(-5*time.Second), 250, 20*time.Millisecond), now, 10)
	if math.Abs(r.Mean-50) > 1.5 {
		t.Fatalf("rates %+v, want about 50/s", r)
	}
}

func TestETAErrors(t *testing.T) {
	var ps []Place
	for i := range 10 {
		// Waited 100 s; predicted 10 s late for the first nine, 50 s for
		// the tenth: errors 0.1 ×9 and 0.5.
		miss := 10 * time.Second
		if i == 9 {
			miss = 50 * time.Second
		}
		ps = append(ps, Place{EnteredAt: t0, AdmittedAt: t0.Add(100 * time.Second), PredictedAt: t0.Add(100*time.Second + miss)})
	}
	ps = append(ps, Place{EnteredAt: t0}) // not admitted: not counted
	st := ETAErrors(ps)
	if st.N != 10 || math.Abs(st.P50-0.1) > 1e-9 || math.Abs(st.P90-0.1) > 1e-9 {
		t.Fatalf("stats %+v, want n 10, p50 0.1, p90 0.1", st)
	}
	ps[0].PredictedAt = t0.Add(150 * time.Second)
	ps[1].PredictedAt = t0.Add(150 * time.Second)
	if st := ETAErrors(ps); math.Abs(st.P90-0.5) > 1e-9 {
		t.Fatalf("p90 %v, want 0.5 once three of ten missed by half", st.P90)
	}
	if st := ETAErrors(nil); st.N != 0 {
		t.Fatalf("stats of nothing %+v", st)
	}
}

// A client told pollAfter asks often enough never to be abandoned: at most
// a third of abandonAfter apart, however far back.
func TestPollAfterWithinAbandonAfter(t *testing.T) {
	far := ETA{Seconds: 3600, Low: 3000, High: 4000}
	for _, c := range []struct {
		abandon, want time.Duration
	}{
		{10 * time.Second, 10 * time.Second / 3},
		{60 * time.Second, 20 * time.Second},
		{time.Hour, 20 * time.Second},
	} {
		if got := pollAfter(far, Queue{AbandonAfter: c.abandon}); got != c.want {
			t.Errorf("abandonAfter %s: pollAfter %s, want %s", c.abandon, got, c.want)
		}
	}
	if got := pollAfter(ETA{Low: 0.5}, Queue{AbandonAfter: time.Minute}); got != time.Second {
		t.Errorf("near the front: pollAfter %s, want 1s", got)
	}
}

// countingRecord counts the reads of admissions; nothing else is called.
type countingRecord struct {
	Record
	reads atomic.Int64
}

func (c *countingRecord) Admitted(context.Context, string, time.Time, int) ([]Place, error) {
	c.reads.Add(1)
	return nil, nil
}

// A measure that is due is read by one caller; the others, meanwhile, keep
// the last one instead of each reading up to maxMeasured admissions.
func TestRatesAreMeasuredByOneCallerAtATime(t *testing.T) {
	rec := &countingRecord{}
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	s, err := NewService(ServiceConfig{Queues: []Queue{{Name: "q", Rate: 5}}, Record: rec, Line: struct{ Line }{},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := s.queue("q")
	s.rates(context.Background(), q, now)
	if rec.reads.Load() != 1 {
		t.Fatalf("%d reads for the first measure", rec.reads.Load())
	}
	later := now.Add(2 * time.Second)
	s.mu.Lock()
	c := s.measured["q"]
	c.measuring = true // another caller is reading the next measure
	s.measured["q"] = c
	s.mu.Unlock()
	for range 10 {
		s.rates(context.Background(), q, later)
	}
	if rec.reads.Load() != 1 {
		t.Fatalf("%d reads while one measure was under way, want none more", rec.reads.Load()-1)
	}
	s.mu.Lock()
	c.measuring = false
	s.measured["q"] = c
	s.mu.Unlock()
	s.rates(context.Background(), q, later)
	if rec.reads.Load() != 2 {
		t.Fatalf("%d reads once the measure was due and free, want 2", rec.reads.Load())
	}
}

// blockingRecord holds each read of admissions until released.
type blockingRecord struct {
	Record
	reads   atomic.Int64
	release chan struct{}
}

func (b *blockingRecord) Admitted(ctx context.Context, _ string, _ time.Time, _ int) ([]Place, error) {
	if b.reads.Add(1) > 1 {
		<-b.release
	}
	return nil, nil
}

// The pushes' estimates never wait on the record: a due measure is read in
// the background, once, and the last one answers meanwhile.
func TestEstimatesDoNotWaitForAMeasure(t *testing.T) {
	rec := &blockingRecord{release: make(chan struct{})}
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, err := NewService(ServiceConfig{Queues: []Queue{{Name: "q", Rate: 5}}, Record: rec, Line: struct{ Line }{}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	s.Estimate(context.Background(), "q", 10, 20) // the first measure, read at once
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	done := make(chan struct{})
	go func() {
		for range 100 {
			if p := s.Estimate(context.Background(), "q", 10, 20); p.ETA.Seconds <= 0 {
				t.Errorf("estimate %+v without an ETA", p)
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("estimates waited for the record's read")
	}
	for deadline := time.Now().Add(10 * time.Second); rec.reads.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no background measure started")
		}
	}
	close(rec.release)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		c := s.measured["q"]
		s.mu.Unlock()
		if !c.measuring && c.at.Equal(clock()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background measure never landed")
		}
	}
	if n := rec.reads.Load(); n != 2 {
		t.Fatalf("%d reads for 101 estimates: want the first and one background measure", n)
	}
}
