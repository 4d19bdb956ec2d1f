package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/record"
)

// now0 is a Wednesday's afternoon: today is 2031-03-05, day D (yesterday)
// 2031-03-04.
var now0 = time.Date(2031, 3, 5, 12, 30, 0, 0, time.UTC)

// clock is a settable clock shared by a test's Services.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) now() time.Time   { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)  { c.ns.Store(t.UnixNano()) }
func (c *clock) add(d time.Duration) {
	c.ns.Add(int64(d))
}

func board(name string, top int, metrics map[string]ranking.Metric) ranking.Board {
	b := ranking.Board{Name: name, Source: ranking.SourceEvents, Metrics: metrics, Top: top, Refresh: time.Minute}
	if err := b.Normalize(); err != nil {
		panic(err)
	}
	return b
}

var ab = map[string]ranking.Metric{"a": {Weight: 1}, "b": {Weight: 2}}

type fixture struct {
	s   *Service
	rec ranking.Record
	rdb redis.UniversalClient
	clk *clock
	pfx string
}

func newFixture(t *testing.T, rdb redis.UniversalClient, prefix string, rec ranking.Record, bs ...ranking.Board) *fixture {
	t.Helper()
	clk := newClock(now0)
	s, err := New(Config{Boards: bs, Record: rec, Redis: rdb, Prefix: prefix, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{s: s, rec: rec, rdb: rdb, clk: clk, pfx: prefix}
}

func (f *fixture) ingest(t *testing.T, board string, es ...ranking.Event) {
	t.Helper()
	if _, _, err := f.s.Ingest(context.Background(), board, es); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) tick(t *testing.T) {
	t.Helper()
	if err := f.s.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) top(t *testing.T, board string, w ranking.Window, period string, limit int) View {
	t.Helper()
	v, err := f.s.Top(context.Background(), board, string(w), period, limit)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var evSeq atomic.Int64

func ev(item, metric string, value float64, at time.Time) ranking.Event {
	return ranking.Event{ID: fmt.Sprintf("e%d", evSeq.Add(1)), Item: item, Metric: metric, Value: value, At: at}
}

// brute ranks every item of p from the record, without the Service.
func brute(t *testing.T, rec ranking.Record, b ranking.Board, w map[string]ranking.Metric, p ranking.Period, carry map[string]float64) []ranking.Ranked {
	t.Helper()
	var items []ranking.ItemMetrics
	if err := rec.Scan(context.Background(), b.Name, p.Start, p.End(), func(m ranking.ItemMetrics) error {
		items = append(items, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ranking.Rank(w, items, carry, 0)
}

func sameRanked(t *testing.T, what string, got, want ranking.Ranked) {
	t.Helper()
	if got.Item != want.Item || got.Rank != want.Rank || got.Score != want.Score || !got.First.Equal(want.First) ||
		fmt.Sprint(got.Metrics) != fmt.Sprint(want.Metrics) || fmt.Sprint(got.Parts) != fmt.Sprint(want.Parts) {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
}

func order(v View) []string {
	out := make([]string, len(v.Items))
	for i, r := range v.Items {
		out[i] = r.Item
	}
	return out
}

func TestTopAfterIngestAndRefresh(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		b := board("b1", 3, ab)
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		sub := pubsub.Subscribe(ctx, rdb, prefix+":ranking:b1:day")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
			t.Fatal(err)
		}
		at := now0.Add(-time.Hour)
		f.ingest(t, "b1", ev("x", "a", 5, at), ev("y", "b", 1, at), ev("z", "a", 1, at), ev("w", "b", 4, at), ev("v", "a", 0.5, at))
		f.tick(t)

		day := ranking.PeriodOf(ranking.WindowDay, now0)
		want := brute(t, f.rec, b, ab, day, nil)
		v := f.top(t, "b1", ranking.WindowDay, "", 0)
		if v.Board != "b1" || v.Window != ranking.WindowDay || v.Period != day.String() || v.WeightsVersion != 0 || !v.RefreshedAt.Equal(now0) {
			t.Fatalf("view header %+v", v)
		}
		if len(v.Items) != 3 {
			t.Fatalf("top 3: %d items", len(v.Items))
		}
		for i, r := range v.Items {
			sameRanked(t, fmt.Sprint("rank ", i+1), r, want[i])
		}
		if got := fmt.Sprint(order(v)); got != "[w x y]" {
			t.Errorf("order %s, want [w x y] (8, 5, 2)", got)
		}

		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"board":"b1","window":"day","period":"2031-03-05","weightsVersion":0}`; msg.Payload != want {
			t.Errorf("announcement %s, want %s", msg.Payload, want)
		}

		// The key's TTL: past the period's end and the retention.
		key := f.s.topKey("b1", day)
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		wantTTL := day.End().Add(b.Retention()).Sub(now0)
		if ttl <= wantTTL-time.Minute || ttl > wantTTL+time.Second {
			t.Errorf("ttl %v, want about %v", ttl, wantTTL)
		}

		// Limit.
		if v := f.top(t, "b1", ranking.WindowDay, day.String(), 2); fmt.Sprint(order(v)) != "[w x]" {
			t.Errorf("limit 2: %v", order(v))
		}
		for _, l := range []int{-1, 4} {
			if _, err := f.s.Top(ctx, "b1", "day", "", l); !errors.Is(err, ErrInvalidLimit) {
				t.Errorf("limit %d: %v, want ErrInvalidLimit", l, err)
			}
		}
		if _, err := f.s.Top(ctx, "nope", "day", "", 0); !errors.Is(err, ranking.ErrUnknownBoard) {
			t.Errorf("unknown board: %v", err)
		}
		if _, err := f.s.Top(ctx, "b1", "month", "", 0); !errors.Is(err, ErrUnknownWindow) {
			t.Errorf("unknown window: %v", err)
		}
		if _, err := f.s.Top(ctx, "b1", "day", "2031-3-5", 0); !errors.Is(err, ErrInvalidPeriod) {
			t.Errorf("bad period: %v", err)
		}

		// A wiped key is rebuilt on read, equal, and stored again.
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		v2 := f.top(t, "b1", ranking.WindowDay, "", 0)
		if fmt.Sprint(order(v2)) != fmt.Sprint(order(v)) {
			t.Errorf("rebuilt %v, want %v", order(v2), order(v))
		}
		if n, _ := rdb.Exists(ctx, key).Result(); n != 1 {
			t.Error("rebuilt view not stored")
		}

		// The hour and the week hold the same events.
		if v := f.top(t, "b1", ranking.WindowHour, ranking.PeriodOf(ranking.WindowHour, at).String(), 0); fmt.Sprint(order(v)) != "[w x y]" {
			t.Errorf("hour: %v", order(v))
		}
		if v := f.top(t, "b1", ranking.WindowWeek, "", 0); fmt.Sprint(order(v)) != "[w x y]" {
			t.Errorf("week: %v", order(v))
		}
		// A period not begun is answered empty and not stored.
		next := day.Next()
		if v := f.top(t, "b1", ranking.WindowDay, next.String(), 0); len(v.Items) != 0 {
			t.Errorf("tomorrow: %v", order(v))
		}
		if n, _ := rdb.Exists(ctx, f.s.topKey("b1", next)).Result(); n != 0 {
			t.Error("a period not begun was stored")
		}
	})
}

func TestIngestRefusals(t *testing.T) {
	rdb := redistest.Mini(t)
	rec := record.NewMemory()
	f := newFixture(t, rdb, redistest.Prefix(t), rec, board("b1", 3, ab))
	ctx := context.Background()
	if _, _, err := f.s.Ingest(ctx, "nope", []ranking.Event{ev("x", "a", 1, now0)}); !errors.Is(err, ranking.ErrUnknownBoard) {
		t.Errorf("unknown board: %v", err)
	}
	bad := []ranking.Event{ev("x", "a", 1, now0), ev("y", "zzz", 1, now0)}
	if _, _, err := f.s.Ingest(ctx, "b1", bad); !errors.Is(err, ranking.ErrInvalidEvent) {
		t.Errorf("invalid event: %v", err)
	}
	if _, _, err := f.s.Ingest(ctx, "b1", []ranking.Event{ev("x", "a", 1, now0.Add(time.Hour))}); !errors.Is(err, ranking.ErrInvalidEvent) {
		t.Errorf("future event: %v", err)
	}
	if _, ok, _ := rec.Item(ctx, "b1", "x", now0.Add(-time.Hour), now0.Add(time.Hour)); ok {
		t.Error("a refused batch wrote its valid event")
	}
	many := make([]ranking.Event, MaxBatch+1)
	for i := range many {
		many[i] = ev("x", "a", 1, now0)
	}
	if _, _, err := f.s.Ingest(ctx, "b1", many); !errors.Is(err, ErrTooMany) {
		t.Errorf("too many: %v", err)
	}
	e := ev("x", "a", 1, now0)
	if a, d, err := f.s.Ingest(ctx, "b1", []ranking.Event{e, e}); err != nil || a != 1 || d != 1 {
		t.Errorf("duplicate: %d %d %v", a, d, err)
	}
}

func TestTiesByAhead(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		b := board("b1", 10, ab)
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		h := now0.Truncate(time.Hour)
		// Equal scores 4: y reached it first, then x and w at one instant
		// (by id), then u later with the score from two metrics.
		f.ingest(t, "b1",
			ev("x", "a", 4, h.Add(10*time.Minute)),
			ev("w", "a", 4, h.Add(10*time.Minute)),
			ev("y", "b", 2, h.Add(1*time.Minute)),
			ev("u", "a", 2, h.Add(20*time.Minute)), ev("u", "b", 1, h.Add(25*time.Minute)),
			ev("top", "a", 9, h.Add(29*time.Minute)))
		v := f.top(t, "b1", ranking.WindowHour, "", 0)
		if got := fmt.Sprint(order(v)); got != "[top y w x u]" {
			t.Errorf("order %s, want [top y w x u]", got)
		}
		for i := 1; i < len(v.Items); i++ {
			if !ranking.Ahead(v.Items[i-1], v.Items[i]) {
				t.Errorf("%s not ahead of %s", v.Items[i-1].Item, v.Items[i].Item)
			}
		}
	})
}

// TestItemMatchesBruteForce: inside and outside the Top N, an item's place
// is its place in a ranking of every item.
func TestItemMatchesBruteForce(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		b := board("b1", 5, ab)
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		rng := rand.New(rand.NewPCG(1, 2))
		var es []ranking.Event
		for i := range 40 {
			at := now0.Add(-time.Duration(rng.IntN(10*60)) * time.Minute)
			// Few distinct values, so ties happen.
			es = append(es, ev(fmt.Sprintf("i%02d", i%25), []string{"a", "b"}[rng.IntN(2)], float64(rng.IntN(4)), at))
		}
		f.ingest(t, "b1", es...)
		f.tick(t)
		day := ranking.PeriodOf(ranking.WindowDay, now0)
		want := brute(t, f.rec, b, ab, day, nil)
		if len(want) < 10 {
			t.Fatalf("only %d items", len(want))
		}
		for _, w := range want {
			got, ok, err := f.s.Item(ctx, "b1", "day", "", w.Item)
			if err != nil || !ok {
				t.Fatalf("item %s: %v %v", w.Item, ok, err)
			}
			sameRanked(t, "item "+w.Item, got, w)
		}
		if _, ok, err := f.s.Item(ctx, "b1", "day", "", "absent"); ok || err != nil {
			t.Errorf("absent item: %v %v", ok, err)
		}
	})
}

// TestReadYourWrite: an item's accepted events show in its rank at once
// when computed on demand, and in the Top N after one refresh.
func TestReadYourWrite(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		b := board("b1", 2, ab)
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		at := now0.Add(-time.Minute)
		f.ingest(t, "b1", ev("x", "a", 10, at), ev("y", "a", 9, at), ev("z", "a", 1, at))
		f.tick(t)
		if r, _, _ := f.s.Item(ctx, "b1", "hour", "", "z"); r.Rank != 3 {
			t.Fatalf("z rank %d, want 3", r.Rank)
		}
		f.ingest(t, "b1", ev("z", "a", 5, now0)) // z: 6, still outside the Top 2
		if r, _, _ := f.s.Item(ctx, "b1", "hour", "", "z"); r.Rank != 3 || r.Score != 6 {
			t.Errorf("z on demand %+v, want rank 3 score 6", r)
		}
		f.ingest(t, "b1", ev("z", "b", 5, now0)) // z: 16, first
		if r, _, _ := f.s.Item(ctx, "b1", "hour", "", "z"); r.Rank != 1 || r.Score != 16 {
			t.Errorf("z on demand %+v, want rank 1 score 16", r)
		}
		f.clk.add(b.Refresh)
		f.tick(t)
		if v := f.top(t, "b1", ranking.WindowHour, "", 0); fmt.Sprint(order(v)) != "[z x]" {
			t.Errorf("after one refresh %v, want [z x]", order(v))
		}
		if r, _, _ := f.s.Item(ctx, "b1", "hour", "", "y"); r.Rank != 3 {
			t.Errorf("y rank %d, want 3", r.Rank)
		}
	})
}

// TestWeightsRescoreThePast: a new version re-ranks retained periods, and
// says who set it.
func TestWeightsRescoreThePast(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		m := map[string]ranking.Metric{"a": {Weight: 1}, "b": {Weight: 0}}
		b := board("b1", 5, m)
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		yday := now0.Add(-24 * time.Hour)
		f.ingest(t, "b1", ev("p", "a", 10, yday), ev("p", "b", 1, yday), ev("q", "a", 1, yday), ev("q", "b", 10, yday))
		f.tick(t)
		prev := ranking.PeriodOf(ranking.WindowDay, yday).String()
		if v := f.top(t, "b1", ranking.WindowDay, prev, 0); fmt.Sprint(order(v)) != "[p q]" {
			t.Fatalf("before %v", order(v))
		}
		if _, err := f.s.SetWeights(ctx, "b1", map[string]ranking.Metric{"a": {Weight: 1}}, "alice"); !errors.Is(err, ErrInvalidWeights) {
			t.Errorf("a metric missing: %v", err)
		}
		if _, err := f.s.SetWeights(ctx, "b1", map[string]ranking.Metric{"a": {Weight: 1}, "b": {Weight: 1}, "c": {Weight: 1}}, "alice"); !errors.Is(err, ErrInvalidWeights) {
			t.Errorf("a metric not the board's: %v", err)
		}
		w, err := f.s.SetWeights(ctx, "b1", map[string]ranking.Metric{"a": {Weight: 0}, "b": {Weight: 1}}, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if w.Version != 1 || w.By != "alice" || !w.At.Equal(now0) {
			t.Errorf("weights %+v", w)
		}
		if got, _ := f.s.Weights(ctx, "b1"); got.Version != 1 || got.By != "alice" {
			t.Errorf("in force %+v", got)
		}
		// Read straight from Redis, as another process would: recomputed.
		other, err := New(Config{Boards: []ranking.Board{b}, Record: f.rec, Redis: rdb, Prefix: prefix, Now: f.clk.now})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Service{f.s, other} {
			v, err := s.Top(ctx, "b1", "day", prev, 0)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(order(v)) != "[q p]" || v.WeightsVersion != 1 {
				t.Errorf("after %v v%d, want [q p] v1", order(v), v.WeightsVersion)
			}
		}
		if v, _, _ := other.read(ctx, b, ranking.PeriodOf(ranking.WindowHour, yday)); v.WeightsVersion != 1 {
			t.Errorf("yesterday's hour stored under v%d, want v1", v.WeightsVersion)
		}
	})
}

// TestCarry: the Top carry.top of day D seed D+1 at carry.fraction of
// their score.
func TestCarry(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		b := ranking.Board{Name: "b1", Source: ranking.SourceEvents, Metrics: map[string]ranking.Metric{"a": {Weight: 1}},
			Windows: []ranking.Window{ranking.WindowHour, ranking.WindowDay}, Top: 5, Carry: ranking.Carry{Top: 2, Fraction: 0.5}}
		if err := b.Normalize(); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		yday := now0.Add(-20 * time.Hour)
		f.ingest(t, "b1", ev("a", "a", 10, yday), ev("b", "a", 6, yday), ev("c", "a", 3, yday), ev("d", "a", 4, now0))
		v := f.top(t, "b1", ranking.WindowDay, "", 0)
		if fmt.Sprint(order(v)) != "[a d b]" {
			t.Fatalf("today %v, want [a d b] (5, 4, 3)", order(v))
		}
		wantCarry := map[string]float64{"a": 5, "b": 3}
		for _, r := range v.Items {
			if c := wantCarry[r.Item]; r.Parts[ranking.PartCarry] != c || (c != 0 && r.Score != c) {
				t.Errorf("%s: score %v parts %v, want carry %v", r.Item, r.Score, r.Parts, c)
			}
		}
		// c, outside yesterday's Top 2, carries nothing and has no event today.
		if _, ok, err := f.s.Item(ctx, "b1", "day", "", "c"); ok || err != nil {
			t.Errorf("c today: %v %v", ok, err)
		}
		// Hours carry nothing.
		if v := f.top(t, "b1", ranking.WindowHour, "", 0); fmt.Sprint(order(v)) != "[d]" {
			t.Errorf("hour %v", order(v))
		}
		// Yesterday's own carry came from the day before, cut by the
		// retention (2 days): it started before now − 48h, so none.
		if v := f.top(t, "b1", ranking.WindowDay, ranking.PeriodOf(ranking.WindowDay, yday).String(), 0); v.Items[0].Score != 10 {
			t.Errorf("yesterday's top %+v", v.Items[0])
		}
	})
}

// TestLeaseOneRefresher: two Services on one Redis; only one refreshes a
// board at a time.
func TestLeaseOneRefresher(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		rec := record.NewMemory()
		b := board("b1", 3, ab)
		f1 := newFixture(t, rdb, prefix, rec, b)
		s2, err := New(Config{Boards: []ranking.Board{b}, Record: rec, Redis: rdb, Prefix: prefix, Now: f1.clk.now})
		if err != nil {
			t.Fatal(err)
		}
		const ticks = 200
		var wg sync.WaitGroup
		for i := range ticks {
			wg.Add(2)
			go func() { defer wg.Done(); _ = f1.s.Tick(context.Background()) }()
			go func() { defer wg.Done(); _ = s2.Tick(context.Background()) }()
			wg.Wait()
			if i == ticks/2 {
				f1.ingest(t, "b1", ev("x", "a", 1, f1.clk.now()))
			}
			f1.clk.add(b.Refresh)
		}
		n1, n2 := f1.s.refreshes.Load(), s2.refreshes.Load()
		if n1+n2 != ticks || (n1 != 0 && n2 != 0) {
			t.Errorf("refreshes %d + %d, want %d by one of them", n1, n2, ticks)
		}
		// The holder gone (its lease released), the other takes over.
		holder, other := f1.s, s2
		if n2 > 0 {
			holder, other = s2, f1.s
		}
		holder.release(context.Background())
		before := other.refreshes.Load()
		if err := other.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		if other.refreshes.Load() != before+1 {
			t.Error("no takeover after release")
		}
	})
}

// TestRefreshRacesWeights: rebuilds on read racing a weights change never
// leave an older version served.
func TestRefreshRacesWeights(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		rec := record.NewMemory()
		b := ranking.Board{Name: "b1", Source: ranking.SourceEvents, Metrics: ab, Windows: []ranking.Window{ranking.WindowHour}, Top: 3}
		if err := b.Normalize(); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, rdb, prefix, rec, b)
		readers := make([]*Service, 3)
		for i := range readers {
			s, err := New(Config{Boards: []ranking.Board{b}, Record: rec, Redis: rdb, Prefix: prefix, Now: f.clk.now})
			if err != nil {
				t.Fatal(err)
			}
			readers[i] = s
		}
		f.ingest(t, "b1", ev("x", "a", 1, now0), ev("y", "b", 1, now0))
		key := f.s.topKey("b1", ranking.PeriodOf(ranking.WindowHour, now0))
		rounds := 300
		if testing.Short() {
			rounds = 50
		}
		stale := 0
		for i := range rounds {
			_ = rdb.Del(ctx, key).Err()
			var wg sync.WaitGroup
			var last atomic.Int64
			wg.Add(1 + len(readers))
			go func() {
				defer wg.Done()
				w, err := f.s.SetWeights(ctx, "b1", map[string]ranking.Metric{"a": {Weight: float64(i)}, "b": {Weight: 1}}, "r")
				if err != nil {
					t.Error(err)
				}
				last.Store(w.Version)
			}()
			for _, s := range readers {
				go func() {
					defer wg.Done()
					if _, err := s.Top(ctx, "b1", "hour", "", 0); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			v, ok, err := f.s.read(ctx, b, ranking.PeriodOf(ranking.WindowHour, now0))
			if err != nil || !ok {
				t.Fatalf("round %d: %v %v", i, ok, err)
			}
			if v.WeightsVersion != last.Load() {
				stale++
			}
		}
		if stale != 0 {
			t.Errorf("%d of %d rounds left an older version stored", stale, rounds)
		}
	})
}

func TestRunStopsWithCtx(t *testing.T) {
	rdb := redistest.Mini(t)
	s, err := New(Config{Boards: []ranking.Board{board("b1", 3, ab)}, Record: record.NewMemory(), Redis: rdb,
		Prefix: redistest.Prefix(t), Tick: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for s.refreshes.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if n, _ := rdb.Exists(context.Background(), s.leaseKeys("b1").Lease).Result(); n != 0 {
		t.Error("lease kept after Run ended")
	}
}

func TestSetBoards(t *testing.T) {
	rdb := redistest.Mini(t)
	f := newFixture(t, rdb, redistest.Prefix(t), record.NewMemory(), board("b1", 3, ab))
	if err := f.s.SetBoards([]ranking.Board{board("b2", 3, ab), {Name: "bad"}}); err == nil {
		t.Error("an invalid board accepted")
	}
	if _, err := f.s.Top(context.Background(), "b1", "day", "", 0); err != nil {
		t.Errorf("boards before not kept: %v", err)
	}
	if err := f.s.SetBoards([]ranking.Board{board("b2", 3, ab)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Top(context.Background(), "b1", "day", "", 0); !errors.Is(err, ranking.ErrUnknownBoard) {
		t.Errorf("b1 after swap: %v", err)
	}
}

func TestPostgresRecord(t *testing.T) {
	pgtest.Require(t)
	rec := record.NewPostgres(pgtest.New(t))
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		b := board("pg"+prefix[len(prefix)-6:], 3, ab)
		f := newFixture(t, rdb, prefix, rec, b)
		at := now0.Add(-time.Hour)
		f.ingest(t, b.Name, ev("x", "a", 5, at), ev("y", "b", 1, at), ev("w", "b", 4, at))
		f.tick(t)
		day := ranking.PeriodOf(ranking.WindowDay, now0)
		want := brute(t, rec, b, ab, day, nil)
		v := f.top(t, b.Name, ranking.WindowDay, "", 0)
		for i, r := range v.Items {
			sameRanked(t, fmt.Sprint("rank ", i+1), r, want[i])
		}
		got, ok, err := f.s.Item(context.Background(), b.Name, "day", "", "y")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		sameRanked(t, "item y", got, want[2])
	})
}

// TestCarryChain: with weeks ranked (14 days' retention) a day's carry
// holds the day before's, which held the one before.
func TestCarryChain(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		b := ranking.Board{Name: "b1", Source: ranking.SourceEvents, Metrics: map[string]ranking.Metric{"a": {Weight: 1}},
			Top: 5, Carry: ranking.Carry{Top: 1, Fraction: 0.5}}
		if err := b.Normalize(); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		f.ingest(t, "b1", ev("a", "a", 8, now0.Add(-48*time.Hour)), ev("b", "a", 3, now0.Add(-48*time.Hour)))
		v := f.top(t, "b1", ranking.WindowDay, "", 0)
		// a: 8 on D-2, 4 carried into D-1, 2 into today; b is outside the
		// carry's Top 1.
		if len(v.Items) != 1 || v.Items[0].Item != "a" || v.Items[0].Score != 2 || v.Items[0].Parts[ranking.PartCarry] != 2 {
			t.Errorf("today %+v, want a alone at 2", v.Items)
		}
	})
}

// BenchmarkTop is a served read (the view in Redis) on real Redis, with
// its p99 besides ns/op.
func BenchmarkTop(b *testing.B) {
	rdb := redistest.Real(b)
	prefix := redistest.Prefix(b)
	bd := board("bench", 100, ab)
	clk := newClock(now0)
	s, err := New(Config{Boards: []ranking.Board{bd}, Record: record.NewMemory(), Redis: rdb, Prefix: prefix, Now: clk.now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var es []ranking.Event
	for i := range 1000 {
		es = append(es, ev(fmt.Sprintf("item-%04d", i), []string{"a", "b"}[i%2], float64(i%97), now0.Add(-time.Duration(i)*time.Second)))
	}
	if _, _, err := s.Ingest(ctx, "bench", es); err != nil {
		b.Fatal(err)
	}
	if err := s.Tick(ctx); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		v, err := s.Top(ctx, "bench", "day", "", 0)
		lat = append(lat, time.Since(t0))
		if err != nil || len(v.Items) != 100 {
			b.Fatal(len(v.Items), err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// TestFencedRefresh: a refresher whose lease was taken over writes nothing.
func TestFencedRefresh(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		rec := record.NewMemory()
		b := board("b1", 3, ab)
		f := newFixture(t, rdb, prefix, rec, b)
		s2, err := New(Config{Boards: []ranking.Board{b}, Record: rec, Redis: rdb, Prefix: prefix, Now: f.clk.now})
		if err != nil {
			t.Fatal(err)
		}
		f.ingest(t, "b1", ev("x", "a", 1, now0))
		f.tick(t)
		old := f.s.state["b1"].token
		if old == 0 {
			t.Fatal("first refresher holds no lease")
		}
		f.clk.add(leaseTTL(b) + time.Second) // its lease expires unrenewed
		if err := s2.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if s2.refreshes.Load() != 1 {
			t.Fatal("no takeover")
		}
		f.ingest(t, "b1", ev("y", "b", 5, f.clk.now()))
		hour := ranking.PeriodOf(ranking.WindowHour, f.clk.now())
		if err := f.s.refreshPeriod(ctx, b, hour, f.clk.now(), old, nil); !errors.Is(err, errLeaseLost) {
			t.Errorf("stale token's refresh: %v, want errLeaseLost", err)
		}
		if v := f.top(t, "b1", ranking.WindowHour, "", 0); fmt.Sprint(order(v)) != "[x]" {
			t.Errorf("the stale refresh wrote %v", order(v))
		}
	})
}

// gatedRecord counts the record's scans, and holds each until let go.
type gatedRecord struct {
	ranking.Record
	scans atomic.Int64
	gate  chan struct{}
}

func (g *gatedRecord) Scan(ctx context.Context, board string, from, to time.Time, fn func(ranking.ItemMetrics) error) error {
	g.scans.Add(1)
	<-g.gate
	return g.Record.Scan(ctx, board, from, to, fn)
}

// TestWipedKeyOneScan: concurrent reads of a wiped key rebuild it once
// in a process, and all answer the same Top N.
func TestWipedKeyOneScan(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		rec := &gatedRecord{Record: record.NewMemory(), gate: make(chan struct{})}
		b := ranking.Board{Name: "b1", Source: ranking.SourceEvents, Metrics: ab, Windows: []ranking.Window{ranking.WindowHour}, Top: 3}
		if err := b.Normalize(); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, rdb, prefix, rec, b)
		f.ingest(t, "b1", ev("x", "a", 1, now0), ev("y", "b", 1, now0))
		key := f.s.topKey("b1", ranking.PeriodOf(ranking.WindowHour, now0))
		const rounds, readers = 50, 16
		for i := range rounds {
			_ = rdb.Del(ctx, key).Err()
			rec.scans.Store(0)
			var wg sync.WaitGroup
			for range readers {
				wg.Go(func() {
					v, err := f.s.Top(ctx, "b1", "hour", "", 0)
					if err != nil || fmt.Sprint(order(v)) != "[y x]" {
						t.Errorf("read %v %v", order(v), err)
					}
				})
			}
			// Every read but the rebuilding one waits on it, then the
			// scan goes on.
			for {
				f.s.flightMu.Lock()
				fl := f.s.flights[key]
				n := 0
				if fl != nil {
					n = fl.waiters
				}
				f.s.flightMu.Unlock()
				if n == readers-1 {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			close(rec.gate)
			wg.Wait()
			rec.gate = make(chan struct{})
			if n := rec.scans.Load(); n != 1 {
				t.Fatalf("round %d: %d scans for %d concurrent reads of a wiped key", i, n, readers)
			}
		}
	})
}

// A view's Digest names its items: the same Top N read again, or
// refreshed unchanged, keeps it; another Top N changes it; a view answered
// but not stored has none.
func TestViewDigest(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		b := board("dg", 2, ab)
		f := newFixture(t, rdb, prefix, record.NewMemory(), b)
		at := now0.Add(-time.Minute)
		f.ingest(t, "dg", ev("x", "a", 10, at), ev("y", "a", 9, at))
		first := f.top(t, "dg", ranking.WindowHour, "", 0) // rebuilt on the miss
		if first.Digest == "" {
			t.Fatal("a stored view without a digest")
		}
		if again := f.top(t, "dg", ranking.WindowHour, "", 0); again.Digest != first.Digest {
			t.Errorf("read again: digest %q, want %q", again.Digest, first.Digest)
		}
		f.clk.add(b.Refresh)
		f.tick(t) // unchanged
		same := f.top(t, "dg", ranking.WindowHour, "", 0)
		if same.Digest != first.Digest || !same.RefreshedAt.After(first.RefreshedAt) {
			t.Errorf("refreshed unchanged: digest %q at %v, want %q after %v", same.Digest, same.RefreshedAt, first.Digest, first.RefreshedAt)
		}
		f.ingest(t, "dg", ev("y", "b", 5, now0)) // y: 19, first
		f.clk.add(b.Refresh)
		f.tick(t)
		other := f.top(t, "dg", ranking.WindowHour, "", 0)
		if other.Digest == first.Digest || fmt.Sprint(order(other)) != "[y x]" {
			t.Errorf("a new Top %v with digest %q, the old one's %q", order(other), other.Digest, first.Digest)
		}
		next := ranking.PeriodOf(ranking.WindowHour, f.clk.now()).Next().String()
		if v := f.top(t, "dg", ranking.WindowHour, next, 0); v.Digest != "" {
			t.Errorf("a period not begun, answered not stored: digest %q", v.Digest)
		}
	})
}

// scanCounter counts a record's scans by span.
type scanCounter struct {
	ranking.Record
	mu    sync.Mutex
	spans map[string]int
}

func (c *scanCounter) Scan(ctx context.Context, board string, from, to time.Time, fn func(ranking.ItemMetrics) error) error {
	c.mu.Lock()
	c.spans[from.Format(time.RFC3339)+"/"+to.Sub(from).String()]++
	c.mu.Unlock()
	return c.Record.Scan(ctx, board, from, to, fn)
}

func (c *scanCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.spans
	c.spans = map[string]int{}
	return out
}

// A refresh ranks each day of the carry chain once, and the next refresh
// ranks only what is not settled: today, and the previous periods at a
// boundary. A settled day's ranking is kept by weights version, so new
// weights rank the chain again, once.
func TestCarryChainRankedOnce(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		b := ranking.Board{Name: "ch", Source: ranking.SourceEvents, Metrics: map[string]ranking.Metric{"a": {Weight: 1}},
			Windows: []ranking.Window{ranking.WindowDay, ranking.WindowWeek}, Top: 3, Carry: ranking.Carry{Top: 2, Fraction: 0.5},
			Refresh: time.Minute}
		if err := b.Normalize(); err != nil {
			t.Fatal(err)
		}
		rec := &scanCounter{Record: record.NewMemory(), spans: map[string]int{}}
		f := newFixture(t, rdb, prefix, rec, b)
		for d := range 14 {
			at := now0.Add(-time.Duration(d) * 24 * time.Hour)
			f.ingest(t, "ch", ev("x", "a", float64(d+1), at), ev(fmt.Sprint("y", d), "a", 2, at))
		}
		days := func(spans map[string]int) (distinct, most int) {
			for span, n := range spans {
				if strings.HasSuffix(span, "/24h0m0s") {
					distinct++
					most = max(most, n)
				}
			}
			return distinct, most
		}
		f.tick(t)
		first := rec.take()
		if n, most := days(first); n < 13 || most != 1 {
			t.Errorf("first refresh: %d days ranked, one of them %d times: %v", n, most, first)
		}
		want := f.top(t, "ch", ranking.WindowDay, "", 0)
		f.clk.add(b.Refresh)
		f.tick(t)
		if n, _ := days(rec.take()); n != 1 {
			t.Errorf("the next refresh ranked %d days, want today's alone", n)
		}
		if got := f.top(t, "ch", ranking.WindowDay, "", 0); fmt.Sprint(got.Items) != fmt.Sprint(want.Items) {
			t.Errorf("today after the next refresh %v, want %v", got.Items, want.Items)
		}
		if _, err := f.s.SetWeights(context.Background(), "ch", map[string]ranking.Metric{"a": {Weight: 2}}, "t"); err != nil {
			t.Fatal(err)
		}
		if n, most := days(rec.take()); n < 13 || most != 1 {
			t.Errorf("new weights: %d days ranked, one %d times", n, most)
		}
	})
}
