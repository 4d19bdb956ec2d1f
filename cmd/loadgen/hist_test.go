package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestBucketsTileTheLine(t *testing.T) {
	// Every value falls in the bucket whose range holds it, and consecutive
	// buckets are contiguous.
	prevHi := uint64(0)
	for i := 0; i < 40*subBuckets; i++ {
		lo, hi := bucketRange(i)
		if i > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d = [%d,%d] but bucketOf gives %d, %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= subBuckets && float64(hi-lo+1)/float64(lo) > 1.0/subBuckets+1e-12 {
			t.Fatalf("bucket %d [%d,%d] is wider than 1/%d", i, lo, hi, subBuckets)
		}
		prevHi = hi
	}
}

func exactQuantile(sorted []uint64, q float64) float64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return float64(sorted[max(rank, 1)-1])
}

func TestQuantilesWithinOnePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var vals []uint64
	for range 100_000 {
		// Log-normal latencies around 2ms with a long tail.
		v := uint64(math.Exp(rng.NormFloat64()*1.2 + math.Log(2000)))
		vals = append(vals, v)
		h.RecordMicros(v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		got, want := h.Quantile(q), exactQuantile(vals, q)
		if math.Abs(got-want)/want > 0.01 {
			t.Errorf("q%.3f = %.0f, exact %.0f (off by more than 1%%)", q, got, want)
		}
	}
	s := h.Summary()
	if s.Count != 100_000 || s.Min != float64(vals[0])/1000 || s.Max != float64(vals[len(vals)-1])/1000 {
		t.Errorf("summary %+v: count/min/max are not exact", s)
	}
}

func TestQuantileEdges(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Summary() != (Summary{}) {
		t.Fatal("an empty histogram reports zeros")
	}
	h.Record(-time.Second) // clamped to 0
	h.Record(7 * time.Millisecond)
	if got := h.Quantile(0.5); got != 0 {
		t.Errorf("p50 of {0, 7000} = %v, want 0", got)
	}
	if got := h.Quantile(1); got != 7000 {
		t.Errorf("p100 = %v, want the exact max 7000", got)
	}
}

func TestMergeEqualsRecordingEverything(t *testing.T) {
	var a, b, all Histogram
	for i := range 5000 {
		v := uint64(i * 37 % 90_000)
		all.RecordMicros(v)
		if i%3 == 0 {
			a.RecordMicros(v)
		} else {
			b.RecordMicros(v)
		}
	}
	a.Merge(&b)
	if a.Summary() != all.Summary() {
		t.Fatalf("merged %+v, want %+v", a.Summary(), all.Summary())
	}
}

func TestHistogramJSONRoundTrip(t *testing.T) {
	var h Histogram
	for i := range 1000 {
		h.RecordMicros(uint64(i * i))
	}
	b, err := json.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Summary() != h.Summary() {
		t.Fatalf("round trip %+v, want %+v", back.Summary(), h.Summary())
	}
}

// The progress line's percentiles are those of its interval: a stall after
// a calm start shows in full in the line that covers it.
func TestProgressLineShowsTheIntervalsPercentiles(t *testing.T) {
	var h Histogram
	for range 1000 {
		h.Record(time.Millisecond)
	}
	first := h.Counts()
	for range 100 {
		h.Record(200 * time.Millisecond)
	}
	var out strings.Builder
	p := newProgress(&out, Config{Mode: modePlayers, Progress: time.Nanosecond})
	p.maybePrint(snapshot{Phase: phaseRun, Counters: map[string]int64{}, Found: first}, true)
	p.maybePrint(snapshot{Phase: phaseRun, Counters: map[string]int64{}, Found: h.Counts()}, true)
	p.maybePrint(snapshot{Phase: phaseRun, Counters: map[string]int64{}, Found: h.Counts()}, true)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d progress lines, want 3:\n%s", len(lines), out.String())
	}
	// The run so far has a p50 of 1 ms and a p99 of 200 ms; the second
	// interval holds only the 200 ms ones.
	for i, want := range []string{"found p50/p99 1.0/1.0 ms", "found p50/p99 200.", "found p50/p99 -"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want it to contain %q", i+1, lines[i], want)
		}
	}
}

func TestAddBucketsSumsAcrossWorkers(t *testing.T) {
	got := addBuckets([]uint64{1, 2}, []uint64{3, 4, 5})
	if want := []uint64{4, 6, 5}; !slices.Equal(got, want) {
		t.Fatalf("addBuckets = %v, want %v", got, want)
	}
}
