package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redislease"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/record"
)

// happening is one join, match or cancel the fake activity counts.
type happening struct {
	item, metric string
	at           time.Time
}

// fakeActivity counts its happenings as the ledger counts its record, and
// notes the spans it was asked for.
type fakeActivity struct {
	mu     sync.Mutex
	hs     []happening
	spans  [][2]time.Time
	onCall func() // run once, at the next call
}

func (a *fakeActivity) add(item, metric string, at time.Time) {
	a.mu.Lock()
	a.hs = append(a.hs, happening{item: item, metric: metric, at: at})
	a.mu.Unlock()
}

func (a *fakeActivity) Activity(_ context.Context, from, to time.Time) ([]ranking.Tally, error) {
	a.mu.Lock()
	a.spans = append(a.spans, [2]time.Time{from, to})
	hook := a.onCall
	a.onCall = nil
	type key struct {
		item string
		hour time.Time
	}
	byKey := map[key]*ranking.Tally{}
	var out []*ranking.Tally
	for _, h := range a.hs {
		if h.at.Before(from) || !h.at.Before(to) {
			continue
		}
		k := key{item: h.item, hour: hourOf(h.at)}
		t, ok := byKey[k]
		if !ok {
			t = &ranking.Tally{Item: h.item, Hour: k.hour, Metrics: map[string]float64{}, First: map[string]time.Time{}}
			byKey[k] = t
			out = append(out, t)
		}
		t.Metrics[h.metric]++
		if f, ok := t.First[h.metric]; !ok || h.at.Before(f) {
			t.First[h.metric] = h.at
		}
	}
	a.mu.Unlock()
	if hook != nil {
		hook()
	}
	tallies := make([]ranking.Tally, len(out))
	for i, t := range out {
		tallies[i] = *t
	}
	return tallies, nil
}

func (a *fakeActivity) lastSpan() [2]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.spans) == 0 {
		return [2]time.Time{}
	}
	return a.spans[len(a.spans)-1]
}

// trending is the demo's kind of matchmaking board.
func trending(metrics map[string]ranking.Metric) ranking.Board {
	b := ranking.Board{Name: "trending", Source: ranking.SourceMatchmaking, Metrics: metrics,
		Windows: []ranking.Window{ranking.WindowHour, ranking.WindowDay}, Top: 10, Refresh: 5 * time.Second}
	if err := b.Normalize(); err != nil {
		panic(err)
	}
	return b
}

var jmc = map[string]ranking.Metric{"joins": {Weight: 1}, "matches": {Weight: 3}, "cancels": {Weight: -1}}

func newFeedFixture(t *testing.T, rdb redis.UniversalClient, prefix string, rec ranking.Record, act Activity, b ranking.Board) *fixture {
	t.Helper()
	clk := newClock(now0)
	s, err := New(Config{Boards: []ranking.Board{b}, Record: rec, Redis: rdb, Prefix: prefix, Now: clk.now, Activity: act})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{s: s, rec: rec, rdb: rdb, clk: clk, pfx: prefix}
}

func scanned(t *testing.T, rec ranking.Record, board string, from, to time.Time) string {
	t.Helper()
	var out []string
	err := rec.Scan(context.Background(), board, from, to, func(m ranking.ItemMetrics) error {
		out = append(out, fmt.Sprintf("%s %v", m.Item, m.Metrics))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(out)
}

func TestFeedCountsReplaceAndFinalHours(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		act, rec := &fakeActivity{}, record.NewMemory()
		b := trending(jmc)
		f := newFeedFixture(t, rdb, prefix, rec, act, b)
		h := hourOf(now0) // 12:00; now0 is 12:30
		// Yesterday's and the last hour's activity, before the server ran.
		act.add("duel", "joins", h.Add(-20*time.Hour))
		act.add("duel", "joins", h.Add(-50*time.Minute))
		act.add("duel", "matches", h.Add(-40*time.Minute))
		act.add("duel", "joins", h.Add(time.Minute))
		act.add("duel", "joins", h.Add(2*time.Minute))
		act.add("duel", "matches", h.Add(3*time.Minute))
		act.add("squad", "joins", h.Add(4*time.Minute))
		act.add("squad", "cancels", h.Add(5*time.Minute))
		f.tick(t)

		// The first feed counts the whole retention in one call.
		if got, want := act.lastSpan(), [2]time.Time{hourOf(now0.Add(-b.Retention())), h.Add(time.Hour)}; got != want {
			t.Fatalf("first span %v, want %v", got, want)
		}
		if got, want := scanned(t, rec, b.Name, h.Add(-24*time.Hour), h.Add(time.Hour)),
			"[duel map[joins:4 matches:2] squad map[cancels:1 joins:1]]"; got != want {
			t.Fatalf("record %s, want %s", got, want)
		}
		v := f.top(t, b.Name, ranking.WindowHour, "", 0)
		if fmt.Sprint(order(v)) != "[duel squad]" || v.Items[0].Score != 2+3 || v.Items[1].Score != 1-1 {
			t.Fatalf("hour's top %+v", v.Items)
		}
		if !v.Items[0].First.Equal(h.Add(time.Minute)) {
			t.Errorf("duel's first %v, want its first join", v.Items[0].First)
		}

		// A recount of the current hour replaces it: 3 joins, not 2 + 3.
		// The hour before ended more than FinalGrace ago: final, a late
		// change to it is not counted again.
		act.add("duel", "joins", h.Add(6*time.Minute))
		act.add("duel", "joins", h.Add(-30*time.Minute))
		f.clk.add(b.Refresh)
		f.tick(t)
		if got, want := act.lastSpan(), [2]time.Time{h, h.Add(time.Hour)}; got != want {
			t.Fatalf("second span %v, want %v (the hour not final)", got, want)
		}
		v = f.top(t, b.Name, ranking.WindowHour, "", 0)
		if v.Items[0].Item != "duel" || v.Items[0].Metrics["joins"] != 3 || v.Items[0].Score != 3+3 {
			t.Fatalf("after a recount %+v", v.Items[0])
		}
		if got, want := scanned(t, rec, b.Name, h.Add(-time.Hour), h), "[duel map[joins:1 matches:1]]"; got != want {
			t.Errorf("final hour %s, want %s", got, want)
		}
	})
}

func TestFeedOnlyDeclaredMetrics(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		act, rec := &fakeActivity{}, record.NewMemory()
		b := trending(map[string]ranking.Metric{"joins": {Weight: 1}})
		f := newFeedFixture(t, rdb, prefix, rec, act, b)
		act.add("duel", "joins", now0)
		act.add("duel", "matches", now0)
		act.add("solo", "cancels", now0)
		f.tick(t)
		if got, want := scanned(t, rec, b.Name, hourOf(now0), now0.Add(time.Hour)), "[duel map[joins:1]]"; got != want {
			t.Errorf("record %s, want %s", got, want)
		}
	})
}

func TestFeedLostLeaseWritesNothing(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		act, rec := &fakeActivity{}, record.NewMemory()
		b := trending(jmc)
		f := newFeedFixture(t, rdb, prefix, rec, act, b)
		act.add("duel", "joins", now0)
		f.tick(t)
		// While the next feed counts, its lease expires and another
		// process takes it: the count is not written.
		act.add("duel", "joins", now0.Add(time.Second))
		act.onCall = func() {
			f.clk.add(leaseTTL(b) + time.Second)
			token, err := redislease.Acquire(context.Background(), rdb, f.s.leaseKeys(b.Name), "other", f.clk.now(), leaseTTL(b), leaseSlack, 0)
			if err != nil || token == 0 {
				t.Errorf("the other process's acquire: %d, %v", token, err)
			}
		}
		f.clk.add(b.Refresh)
		f.tick(t)
		if got, want := scanned(t, rec, b.Name, hourOf(now0), now0.Add(time.Hour)), "[duel map[joins:1]]"; got != want {
			t.Errorf("record %s, want %s (the first count only)", got, want)
		}
		if f.s.state[b.Name].token != 0 {
			t.Error("the lease is still believed held")
		}
		// Not holding the lease, the next ticks count nothing.
		calls := len(act.spans)
		f.clk.add(b.Refresh)
		f.tick(t)
		if len(act.spans) != calls {
			t.Error("a process without the lease counted")
		}
	})
}

func TestFeedNewHolderStartsFromTheRetention(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		act, rec := &fakeActivity{}, record.NewMemory()
		b := trending(jmc)
		f := newFeedFixture(t, rdb, prefix, rec, act, b)
		next := hourOf(now0).Add(time.Hour)
		f.clk.set(next.Add(FinalGrace - 5*time.Second)) // the hour before is not final yet
		f.tick(t)
		f.clk.add(6 * time.Second) // now it is
		f.tick(t)
		if got := act.lastSpan()[0]; !got.Equal(hourOf(now0)) {
			t.Fatalf("holder's second span from %v, want %v", got, hourOf(now0))
		}
		f.clk.add(b.Refresh)
		f.tick(t)
		if got := act.lastSpan()[0]; !got.Equal(next) {
			t.Fatalf("holder's third span from %v, want %v", got, next)
		}
		f.s.release(context.Background())
		f.clk.add(b.Refresh)
		f.tick(t) // takes the lease again
		if got, want := act.lastSpan()[0], hourOf(f.clk.now().Add(-b.Retention())); !got.Equal(want) {
			t.Errorf("new holder's span from %v, want %v", got, want)
		}
	})
}

func TestFeedWithoutActivity(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		rec := record.NewMemory()
		b := trending(jmc)
		f := newFeedFixture(t, rdb, prefix, rec, nil, b)
		f.tick(t)
		if got := scanned(t, rec, b.Name, hourOf(now0).Add(-48*time.Hour), now0.Add(time.Hour)); got != "[]" {
			t.Errorf("unfed board's record %s", got)
		}
		if v := f.top(t, b.Name, ranking.WindowHour, "", 0); len(v.Items) != 0 {
			t.Errorf("unfed board's top %+v", v.Items)
		}
	})
}

func TestFeedBoardRefusesEvents(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		f := newFeedFixture(t, rdb, prefix, record.NewMemory(), &fakeActivity{}, trending(jmc))
		_, _, err := f.s.Ingest(context.Background(), "trending", []ranking.Event{ev("duel", "joins", 1, now0)})
		if !errors.Is(err, ranking.ErrInvalidEvent) {
			t.Fatalf("an event posted to a matchmaking board: %v, want ErrInvalidEvent", err)
		}
	})
}
