package record_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/record"
)

func TestMemory(t *testing.T) {
	testRecord(t, func(*testing.T) ranking.Record { return record.NewMemory() })
}

func TestPostgres(t *testing.T) {
	pgtest.Require(t)
	testRecord(t, func(t *testing.T) ranking.Record { return record.NewPostgres(pgtest.New(t)) })
}

// h0 is an hour's start; t0 is inside it, with nanoseconds on purpose:
// both records must store microseconds.
var (
	h0 = time.Date(2031, 3, 3, 5, 0, 0, 0, time.UTC) // a Monday
	t0 = h0.Add(6*time.Minute + 7*time.Second + 123456789)
)

// us is t as a record returns it.
func us(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func ev(id, item, metric string, value float64, at time.Time) ranking.Event {
	return ranking.Event{ID: id, Item: item, Metric: metric, Value: value, At: at}
}

func mustIngest(t testing.TB, r ranking.Record, board string, events ...ranking.Event) (accepted, duplicates int) {
	t.Helper()
	a, d, err := r.Ingest(context.Background(), board, events)
	if err != nil {
		t.Fatalf("Ingest %d events: %v", len(events), err)
	}
	if a+d != len(events) {
		t.Fatalf("Ingest %d events: accepted %d + duplicates %d", len(events), a, d)
	}
	return a, d
}

func scanAll(t testing.TB, r ranking.Record, board string, from, to time.Time) []ranking.ItemMetrics {
	t.Helper()
	var out []ranking.ItemMetrics
	if err := r.Scan(context.Background(), board, from, to, func(m ranking.ItemMetrics) error {
		out = append(out, m)
		return nil
	}); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return out
}

func equal(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func im(item string, first time.Time, kv ...any) ranking.ItemMetrics {
	m := ranking.ItemMetrics{Item: item, First: us(first), Metrics: map[string]float64{}}
	for i := 0; i < len(kv); i += 2 {
		m.Metrics[kv[i].(string)] = kv[i+1].(float64)
	}
	return m
}

// testRecord is the behaviour every ranking.Record must have. newRecord
// returns an empty record that lives until the end of the test it is given.
func testRecord(t *testing.T, newRecord func(t *testing.T) ranking.Record) {
	week := h0.Add(7 * 24 * time.Hour)

	t.Run("IngestAndScan", func(t *testing.T) {
		r := newRecord(t)
		a, d := mustIngest(t, r, "b",
			ev("1", "q1", "joins", 1, t0),
			ev("2", "q1", "joins", 2, t0.Add(time.Minute)),
			ev("3", "q1", "matches", 4, t0.Add(-time.Minute)),
			ev("4", "q2", "joins", 8, t0))
		if a != 4 || d != 0 {
			t.Fatalf("accepted %d, duplicates %d; want 4, 0", a, d)
		}
		equal(t, "scan", scanAll(t, r, "b", h0, h0.Add(time.Hour)), []ranking.ItemMetrics{
			im("q1", t0.Add(-time.Minute), "joins", 3.0, "matches", 4.0),
			im("q2", t0, "joins", 8.0),
		})
		// Boards are apart.
		equal(t, "other board", scanAll(t, r, "other", h0, week), []ranking.ItemMetrics(nil))
		mustIngest(t, r, "other", ev("1", "q1", "joins", 16, t0))
		equal(t, "other board", scanAll(t, r, "other", h0, week), []ranking.ItemMetrics{im("q1", t0, "joins", 16.0)})
		if a, _, err := r.Ingest(context.Background(), "b", nil); err != nil || a != 0 {
			t.Fatalf("empty Ingest = %d, %v", a, err)
		}
	})

	t.Run("ExactlyOnce", func(t *testing.T) {
		r := newRecord(t)
		batch := []ranking.Event{ev("a", "q", "joins", 1, t0), ev("b", "q", "joins", 2, t0)}
		mustIngest(t, r, "b", batch...)
		if a, d := mustIngest(t, r, "b", batch...); a != 0 || d != 2 {
			t.Fatalf("repeated batch: accepted %d, duplicates %d", a, d)
		}
		// Duplicates inside a batch: the first counts, whatever the value
		// of the others.
		if a, d := mustIngest(t, r, "b",
			ev("c", "q", "joins", 4, t0), ev("c", "q", "joins", 100, t0), ev("a", "q", "joins", 100, t0),
			ev("d", "q", "joins", 8, t0), ev("c", "r", "joins", 100, t0)); a != 2 || d != 3 {
			t.Fatalf("batch with duplicates: accepted %d, duplicates %d; want 2, 3", a, d)
		}
		equal(t, "sums", scanAll(t, r, "b", h0, week), []ranking.ItemMetrics{im("q", t0, "joins", 15.0)})
	})

	t.Run("ConcurrentOverlappingBatches", func(t *testing.T) {
		r := newRecord(t)
		const workers, ids = 12, 60
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted int
			dups     int
		)
		// Every worker sends every id, in its own order and batches: each
		// id is counted by one of them.
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				perm := rng.Perm(ids)
				for len(perm) > 0 {
					n := min(len(perm), 1+rng.IntN(12))
					var batch []ranking.Event
					for _, i := range perm[:n] {
						batch = append(batch, ev(fmt.Sprint("id", i), fmt.Sprint("q", i%3), "joins", float64(i), t0))
					}
					perm = perm[n:]
					a, d, err := r.Ingest(context.Background(), "b", batch)
					mu.Lock()
					if err != nil {
						t.Error(err)
					}
					accepted, dups = accepted+a, dups+d
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if accepted != ids || accepted+dups != workers*ids {
			t.Fatalf("accepted %d, duplicates %d; want %d of %d", accepted, dups, ids, workers*ids)
		}
		want := make([]ranking.ItemMetrics, 3)
		for i := range 3 {
			want[i] = im(fmt.Sprint("q", i), t0, "joins", 0.0)
		}
		for i := range ids {
			want[i%3].Metrics["joins"] += float64(i)
		}
		equal(t, "sums", scanAll(t, r, "b", h0, week), want)
	})

	t.Run("HourBoundaries", func(t *testing.T) {
		r := newRecord(t)
		h1 := h0.Add(time.Hour)
		last := h1.Add(-time.Millisecond) // 05:59:59.999
		mustIngest(t, r, "b", ev("1", "q", "joins", 1, last), ev("2", "q", "joins", 2, h1), ev("3", "q", "joins", 4, h0))
		// Times in other zones are their UTC instant.
		mustIngest(t, r, "b", ev("4", "q", "joins", 8, h1.Add(-time.Nanosecond).In(time.FixedZone("X", 5*3600+1800))))
		equal(t, "first hour", scanAll(t, r, "b", h0, h1), []ranking.ItemMetrics{im("q", h0, "joins", 13.0)})
		equal(t, "second hour", scanAll(t, r, "b", h1, h1.Add(time.Hour)), []ranking.ItemMetrics{im("q", h1, "joins", 2.0)})
		equal(t, "both", scanAll(t, r, "b", h0, h1.Add(time.Hour)), []ranking.ItemMetrics{im("q", h0, "joins", 15.0)})
		equal(t, "none before", scanAll(t, r, "b", h0.Add(-time.Hour), h0), []ranking.ItemMetrics(nil))
	})

	t.Run("FirstAt", func(t *testing.T) {
		r := newRecord(t)
		mustIngest(t, r, "b", ev("1", "q", "joins", 1, t0.Add(20*time.Minute)), ev("2", "q", "matches", 1, t0.Add(10*time.Minute)))
		mustIngest(t, r, "b", ev("3", "q", "joins", 1, t0))                                                                       // earlier, later batch
		mustIngest(t, r, "b", ev("4", "q", "joins", 1, t0.Add(time.Hour)))                                                        // next hour
		mustIngest(t, r, "b", ev("5", "q", "joins", 1, t0.Add(-time.Nanosecond)), ev("3", "q", "joins", 1, t0.Add(-time.Minute))) // a duplicate moves nothing
		equal(t, "first", scanAll(t, r, "b", h0, week), []ranking.ItemMetrics{im("q", t0.Add(-time.Nanosecond), "joins", 4.0, "matches", 1.0)})
		equal(t, "next hour", scanAll(t, r, "b", h0.Add(time.Hour), week), []ranking.ItemMetrics{im("q", t0.Add(time.Hour), "joins", 1.0)})
	})

	t.Run("ScanRanges", func(t *testing.T) {
		r := newRecord(t)
		// One event an hour for a week, item by day of the week, and a
		// second item every sixth hour.
		var batch []ranking.Event
		for h := range 7 * 24 {
			at := h0.Add(time.Duration(h)*time.Hour + time.Minute)
			batch = append(batch, ev(fmt.Sprint("a", h), "all", "joins", 1, at))
			if h%6 == 0 {
				batch = append(batch, ev(fmt.Sprint("s", h), "sixth", "joins", 2, at))
			}
		}
		mustIngest(t, r, "b", batch...)
		min1 := time.Minute
		equal(t, "hour", scanAll(t, r, "b", h0.Add(6*time.Hour), h0.Add(7*time.Hour)), []ranking.ItemMetrics{
			im("all", h0.Add(6*time.Hour+min1), "joins", 1.0), im("sixth", h0.Add(6*time.Hour+min1), "joins", 2.0)})
		equal(t, "an hour without the second", scanAll(t, r, "b", h0.Add(7*time.Hour), h0.Add(8*time.Hour)), []ranking.ItemMetrics{
			im("all", h0.Add(7*time.Hour+min1), "joins", 1.0)})
		day2 := h0.Add(24 * time.Hour)
		equal(t, "day", scanAll(t, r, "b", day2, day2.Add(24*time.Hour)), []ranking.ItemMetrics{
			im("all", day2.Add(min1), "joins", 24.0), im("sixth", day2.Add(min1), "joins", 8.0)})
		equal(t, "week", scanAll(t, r, "b", h0, week), []ranking.ItemMetrics{
			im("all", h0.Add(min1), "joins", 168.0), im("sixth", h0.Add(min1), "joins", 56.0)})
		equal(t, "after", scanAll(t, r, "b", week, week.Add(24*time.Hour)), []ranking.ItemMetrics(nil))
		equal(t, "empty span", scanAll(t, r, "b", day2, day2), []ranking.ItemMetrics(nil))
	})

	t.Run("ScanOrderAndStop", func(t *testing.T) {
		r := newRecord(t)
		// Byte order, whatever the database's collation: upper case before
		// lower, and "é" after "z".
		items := []string{"z", "é", "B", "a", "b", "A", "a b", "ab"}
		var batch []ranking.Event
		for i, it := range items {
			batch = append(batch, ev(fmt.Sprint(i), it, "joins", 1, t0))
		}
		mustIngest(t, r, "b", batch...)
		var got []string
		for _, m := range scanAll(t, r, "b", h0, week) {
			got = append(got, m.Item)
		}
		equal(t, "order", got, []string{"A", "B", "a", "a b", "ab", "b", "z", "é"})
		stop := errors.New("stop")
		var seen int
		err := r.Scan(context.Background(), "b", h0, week, func(ranking.ItemMetrics) error {
			seen++
			if seen == 3 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || seen != 3 {
			t.Fatalf("Scan stopped after %d with %v; want 3 and fn's error", seen, err)
		}
	})

	t.Run("Item", func(t *testing.T) {
		r := newRecord(t)
		mustIngest(t, r, "b", ev("1", "q", "joins", 1, t0), ev("2", "q", "matches", 2, t0.Add(time.Hour)), ev("3", "p", "joins", 4, t0))
		ctx := context.Background()
		m, ok, err := r.Item(ctx, "b", "q", h0, week)
		if err != nil || !ok {
			t.Fatalf("Item = %v, %v", ok, err)
		}
		equal(t, "item", m, im("q", t0, "joins", 1.0, "matches", 2.0))
		m, ok, err = r.Item(ctx, "b", "q", h0.Add(time.Hour), week)
		if err != nil || !ok {
			t.Fatalf("Item = %v, %v", ok, err)
		}
		equal(t, "item later", m, im("q", t0.Add(time.Hour), "matches", 2.0))
		for name, q := range map[string][3]any{
			"unknown item":  {"b", "x", h0},
			"unknown board": {"c", "q", h0},
			"outside":       {"b", "p", h0.Add(time.Hour)},
		} {
			m, ok, err := r.Item(ctx, q[0].(string), q[1].(string), q[2].(time.Time), week)
			if err != nil || ok {
				t.Errorf("%s: Item = %+v, %v, %v; want absent", name, m, ok, err)
			}
		}
	})

	t.Run("Weights", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		if _, ok, err := r.Weights(ctx, "b"); err != nil || ok {
			t.Fatalf("Weights before any = %v, %v", ok, err)
		}
		for v := int64(1); v <= 3; v++ {
			in := ranking.Weights{Version: 42, By: fmt.Sprint("op", v), At: t0.Add(time.Duration(v) * time.Minute),
				Metrics: map[string]ranking.Metric{
					"joins":   {Weight: float64(v) / 10},
					"matches": {Weight: 1e-7 * float64(v), Transform: ranking.TransformLog1p},
				}}
			want := ranking.Weights{Version: v, By: in.By, At: us(in.At), Metrics: in.Metrics}
			got, err := r.SetWeights(ctx, "b", in)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "set", got, want)
			read, ok, err := r.Weights(ctx, "b")
			if err != nil || !ok {
				t.Fatalf("Weights = %v, %v", ok, err)
			}
			equal(t, "read back", read, want)
		}
		// Another board counts its own versions; no metrics is none.
		got, err := r.SetWeights(ctx, "c", ranking.Weights{At: t0})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "other board", got, ranking.Weights{Version: 1, At: us(t0), Metrics: map[string]ranking.Metric{}})
		for name, w := range map[string]ranking.Weights{
			"no time":         {},
			"a NUL in by":     {By: "a\x00", At: t0},
			"a bad metric":    {At: t0, Metrics: map[string]ranking.Metric{"\xff": {Weight: 1}}},
			"an empty metric": {At: t0, Metrics: map[string]ranking.Metric{"": {Weight: 1}}},
			"an infinite one": {At: t0, Metrics: map[string]ranking.Metric{"joins": {Weight: math.Inf(-1)}}},
		} {
			if _, err := r.SetWeights(ctx, "c", w); err == nil {
				t.Errorf("%s: weights were set", name)
			}
		}
		if w, _, _ := r.Weights(ctx, "c"); w.Version != 1 {
			t.Fatalf("refused weights took a version: %+v", w)
		}
	})

	t.Run("WeightsRacing", func(t *testing.T) {
		r := newRecord(t)
		const writers = 8
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			versions = map[int64]bool{}
		)
		for i := range writers {
			wg.Go(func() {
				w, err := r.SetWeights(context.Background(), "b", ranking.Weights{By: fmt.Sprint(i), At: t0})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				versions[w.Version] = true
			})
		}
		wg.Wait()
		for v := int64(1); v <= writers; v++ {
			if !versions[v] {
				t.Fatalf("versions %v; want 1..%d each once", versions, writers)
			}
		}
	})

	t.Run("Prune", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		h1 := h0.Add(time.Hour)
		mustIngest(t, r, "b", ev("old", "q", "joins", 1, t0), ev("new", "q", "joins", 2, t0.Add(time.Hour)))
		mustIngest(t, r, "c", ev("old", "q", "joins", 4, t0))
		if err := r.Prune(ctx, "b", h1); err != nil {
			t.Fatal(err)
		}
		equal(t, "pruned", scanAll(t, r, "b", h0, week), []ranking.ItemMetrics{im("q", t0.Add(time.Hour), "joins", 2.0)})
		equal(t, "another board kept", scanAll(t, r, "c", h0, week), []ranking.ItemMetrics{im("q", t0, "joins", 4.0)})
		// The kept ids still count once; the forgotten may count again.
		if a, d := mustIngest(t, r, "b", ev("new", "q", "joins", 2, t0.Add(time.Hour)), ev("old", "q", "joins", 1, t0)); a != 1 || d != 1 {
			t.Fatalf("after Prune: accepted %d, duplicates %d; want 1, 1", a, d)
		}
		if err := r.Prune(ctx, "nobody", h1); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ContextCancelled", func(t *testing.T) {
		r := newRecord(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := r.Ingest(ctx, "b", []ranking.Event{ev("1", "q", "joins", 1, t0)}); !errors.Is(err, context.Canceled) {
			t.Errorf("Ingest = %v", err)
		}
		big := make([]ranking.Event, 300)
		for i := range big {
			big[i] = ev(fmt.Sprint("big", i), "q", "joins", 1, t0)
		}
		if _, _, err := r.Ingest(ctx, "b", big); !errors.Is(err, context.Canceled) {
			t.Errorf("Ingest of a large batch = %v", err)
		}
		if err := r.Scan(ctx, "b", h0, week, func(ranking.ItemMetrics) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("Scan = %v", err)
		}
		if _, _, err := r.Item(ctx, "b", "q", h0, week); !errors.Is(err, context.Canceled) {
			t.Errorf("Item = %v", err)
		}
		if _, err := r.SetWeights(ctx, "b", ranking.Weights{At: t0}); !errors.Is(err, context.Canceled) {
			t.Errorf("SetWeights = %v", err)
		}
		if _, _, err := r.Weights(ctx, "b"); !errors.Is(err, context.Canceled) {
			t.Errorf("Weights = %v", err)
		}
		if err := r.Prune(ctx, "b", week); !errors.Is(err, context.Canceled) {
			t.Errorf("Prune = %v", err)
		}
		// Nothing was written.
		equal(t, "after", scanAll(t, r, "b", h0, week), []ranking.ItemMetrics(nil))
		if _, ok, _ := r.Weights(context.Background(), "b"); ok {
			t.Error("weights set under a cancelled context")
		}
	})

	t.Run("LargeValues", func(t *testing.T) {
		r := newRecord(t)
		mustIngest(t, r, "b", ev("1", "q", "v", 1e300, t0), ev("2", "q", "v", 1e300, t0.Add(time.Hour)),
			ev("3", "p", "v", 1<<53, t0), ev("4", "p", "v", 2, t0), ev("5", "p", "w", 0, t0))
		mustIngest(t, r, "b", ev("6", "q", "v", 1e300, t0))
		equal(t, "sums", scanAll(t, r, "b", h0, week), []ranking.ItemMetrics{
			im("p", t0, "v", float64(1<<53+2), "w", 0.0),
			im("q", t0, "v", 3e300),
		})
	})

	t.Run("RefusesInvalidEvents", func(t *testing.T) {
		r := newRecord(t)
		ok := ev("ok", "q", "joins", 1, t0)
		for name, e := range map[string]ranking.Event{
			"no id":      ev("", "q", "joins", 1, t0),
			"no item":    ev("x", "", "joins", 1, t0),
			"no metric":  ev("x", "q", "", 1, t0),
			"no time":    ev("x", "q", "joins", 1, time.Time{}),
			"negative":   ev("x", "q", "joins", -1, t0),
			"NaN":        ev("x", "q", "joins", nan(), t0),
			"infinite":   ev("x", "q", "joins", math.Inf(1), t0),
			"NUL":        ev("x\x00", "q", "joins", 1, t0),
			"not UTF-8":  ev("x", "q\xff", "joins", 1, t0),
			"year 0":     ev("x", "q", "joins", 1, time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC)),
			"year 10000": ev("x", "q", "joins", 1, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)),
		} {
			if _, _, err := r.Ingest(context.Background(), "b", []ranking.Event{ok, e}); !errors.Is(err, ranking.ErrInvalidEvent) {
				t.Errorf("%s: Ingest = %v, want ErrInvalidEvent", name, err)
			}
		}
		if _, _, err := r.Ingest(context.Background(), "", []ranking.Event{ok}); !errors.Is(err, ranking.ErrInvalidEvent) {
			t.Errorf("no board: Ingest = %v", err)
		}
		equal(t, "nothing written", scanAll(t, r, "b", h0, week), []ranking.ItemMetrics(nil))
	})

	t.Run("Race", func(t *testing.T) { testRace(t, newRecord(t)) })
	t.Run("SetHours", func(t *testing.T) { testSetHours(t, newRecord) })
}

func nan() float64 { return math.NaN() }

// testRace: 16 goroutines × 200 batches of 50 events, 5% of them drawn
// again from the ids every goroutine has sent: the sums are the distinct
// events' values, and each event is accepted once.
func testRace(t *testing.T, r ranking.Record) {
	const (
		workers = 16
		batches = 200
		size    = 50
		items   = 37
	)
	// An id's event is a function of the id, so that whichever copy is
	// counted the sums are the same.
	event := func(n int) ranking.Event {
		return ev(fmt.Sprint("e", n), fmt.Sprint("i", n%items), []string{"joins", "matches"}[n%2],
			float64(n%7+1), t0.Add(time.Duration(n%(3*60))*time.Minute))
	}
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		accepted    int
		duplicates  int
		sent        = map[int]bool{}
		sentCounted int
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for b := range batches {
				batch := make([]ranking.Event, size)
				ns := make([]int, size)
				for i := range batch {
					if rng.IntN(100) < 5 {
						// From the shared space: any id any worker may have
						// sent, or be sending.
						ns[i] = rng.IntN(workers * batches * size)
					} else {
						ns[i] = (w*batches+b)*size + i
					}
					batch[i] = event(ns[i])
				}
				a, d, err := r.Ingest(context.Background(), "race", batch)
				mu.Lock()
				if err != nil {
					t.Error(err)
				} else {
					accepted, duplicates = accepted+a, duplicates+d
					for _, n := range ns {
						sent[n] = true
					}
					sentCounted += len(batch)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if accepted != len(sent) || accepted+duplicates != sentCounted {
		t.Fatalf("accepted %d, duplicates %d of %d sent; want %d accepted (the distinct ids)",
			accepted, duplicates, sentCounted, len(sent))
	}
	if duplicates == 0 {
		t.Fatal("no duplicate was sent: the test tests nothing")
	}
	want := map[string]ranking.ItemMetrics{}
	for n := range sent {
		e := event(n)
		m, ok := want[e.Item]
		if !ok {
			m = ranking.ItemMetrics{Item: e.Item, Metrics: map[string]float64{}, First: us(e.At)}
		}
		m.Metrics[e.Metric] += e.Value
		if e.At.Before(m.First) {
			m.First = us(e.At)
		}
		want[e.Item] = m
	}
	got := scanAll(t, r, "race", h0, h0.Add(24*time.Hour))
	if len(got) != len(want) {
		t.Fatalf("%d items, want %d", len(got), len(want))
	}
	for _, m := range got {
		equal(t, "item "+m.Item, m, want[m.Item])
	}
	t.Logf("%d sent, %d accepted, %d duplicates", sentCounted, accepted, duplicates)
}
