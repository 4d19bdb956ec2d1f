package record_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/matchgate/matchgate/ranking"
)

// tally is item's metrics in hour, each metric's first event at first.
func tally(item string, hour, first time.Time, kv ...any) ranking.Tally {
	t := ranking.Tally{Item: item, Hour: hour, Metrics: map[string]float64{}, First: map[string]time.Time{}}
	for i := 0; i < len(kv); i += 2 {
		t.Metrics[kv[i].(string)] = kv[i+1].(float64)
		t.First[kv[i].(string)] = first
	}
	return t
}

func mustSetHours(t *testing.T, r ranking.Record, board string, from, to time.Time, tallies ...ranking.Tally) {
	t.Helper()
	if err := r.SetHours(context.Background(), board, from, to, tallies); err != nil {
		t.Fatalf("SetHours: %v", err)
	}
}

// testSetHours is SetHours' part of the contract.
func testSetHours(t *testing.T, newRecord func(t *testing.T) ranking.Record) {
	h1, h2, h3 := h0.Add(time.Hour), h0.Add(2*time.Hour), h0.Add(3*time.Hour)

	t.Run("ReplacesTheSpan", func(t *testing.T) {
		r := newRecord(t)
		mustSetHours(t, r, "b", h0, h2,
			tally("q1", h0, t0, "joins", 3.0, "matches", 1.0),
			tally("q2", h1, h1.Add(time.Minute), "joins", 2.0))
		equal(t, "first count", scanAll(t, r, "b", h0, h3), []ranking.ItemMetrics{
			im("q1", t0, "joins", 3.0, "matches", 1.0),
			im("q2", h1.Add(time.Minute), "joins", 2.0),
		})
		// A recount of h1 alone replaces it, not adds to it; h0 is kept.
		mustSetHours(t, r, "b", h1, h2, tally("q2", h1, h1.Add(2*time.Minute), "joins", 5.0, "cancels", 1.0))
		equal(t, "recount", scanAll(t, r, "b", h1, h2), []ranking.ItemMetrics{
			im("q2", h1.Add(2*time.Minute), "joins", 5.0, "cancels", 1.0),
		})
		equal(t, "untouched hour", scanAll(t, r, "b", h0, h1), []ranking.ItemMetrics{
			im("q1", t0, "joins", 3.0, "matches", 1.0),
		})
		// Hours and items absent from the tallies are emptied; a 0 writes
		// no bucket.
		mustSetHours(t, r, "b", h0, h2, tally("q3", h0, t0, "joins", 0.0))
		equal(t, "emptied", scanAll(t, r, "b", h0, h3), []ranking.ItemMetrics(nil))
		mustSetHours(t, r, "b", h1, h1) // an empty span does nothing
	})

	t.Run("LeavesEventsAndOtherBoards", func(t *testing.T) {
		r := newRecord(t)
		mustIngest(t, r, "b", ev("e1", "q", "joins", 1, t0))
		mustIngest(t, r, "other", ev("e1", "q", "joins", 4, t0))
		mustSetHours(t, r, "b", h0, h1)
		equal(t, "emptied", scanAll(t, r, "b", h0, h1), []ranking.ItemMetrics(nil))
		equal(t, "other board", scanAll(t, r, "other", h0, h1), []ranking.ItemMetrics{im("q", t0, "joins", 4.0)})
		// The event id is still known: sent again, it is a duplicate.
		if a, d := mustIngest(t, r, "b", ev("e1", "q", "joins", 1, t0)); a != 0 || d != 1 {
			t.Fatalf("event again: accepted %d, duplicates %d; want 0, 1", a, d)
		}
		// Tallies and ingested events then add up in Scan.
		mustSetHours(t, r, "b", h1, h2, tally("q", h1, h1, "joins", 2.0))
		mustIngest(t, r, "b", ev("e2", "q", "joins", 1, t0))
		equal(t, "both", scanAll(t, r, "b", h0, h2), []ranking.ItemMetrics{im("q", t0, "joins", 3.0)})
	})

	t.Run("Refuses", func(t *testing.T) {
		r := newRecord(t)
		mustSetHours(t, r, "b", h0, h1, tally("q", h0, t0, "joins", 1.0))
		ok := tally("p", h0, t0, "joins", 1.0)
		for name, c := range map[string]struct {
			board    string
			from, to time.Time
			tallies  []ranking.Tally
		}{
			"no board":          {board: "", from: h0, to: h1},
			"from off the hour": {board: "b", from: t0, to: h1},
			"to off the hour":   {board: "b", from: h0, to: t0},
			"reversed":          {board: "b", from: h1, to: h0},
			"hour outside":      {board: "b", from: h0, to: h1, tallies: []ranking.Tally{ok, tally("p", h1, h1, "joins", 1.0)}},
			"hour off":          {board: "b", from: h0, to: h2, tallies: []ranking.Tally{tally("p", t0, t0, "joins", 1.0)}},
			"no item":           {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("", h0, t0, "joins", 1.0)}},
			"negative":          {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("p", h0, t0, "joins", -1.0)}},
			"NaN":               {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("p", h0, t0, "joins", math.NaN())}},
			"infinite":          {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("p", h0, t0, "joins", math.Inf(1))}},
			"metric name":       {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("p", h0, t0, "Joins", 1.0)}},
			"first before":      {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("p", h0, h0.Add(-time.Microsecond), "joins", 1.0)}},
			"first after":       {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("p", h0, h1, "joins", 1.0)}},
			"no first":          {board: "b", from: h0, to: h1, tallies: []ranking.Tally{tally("p", h0, time.Time{}, "joins", 1.0)}},
			"twice":             {board: "b", from: h0, to: h1, tallies: []ranking.Tally{ok, tally("p", h0, t0, "matches", 1.0)}},
		} {
			if err := r.SetHours(context.Background(), c.board, c.from, c.to, c.tallies); !errors.Is(err, ranking.ErrInvalidTally) {
				t.Errorf("%s: SetHours = %v, want ErrInvalidTally", name, err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := r.SetHours(ctx, "b", h0, h1, []ranking.Tally{ok}); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: SetHours = %v", err)
		}
		equal(t, "nothing written", scanAll(t, r, "b", h0, h1), []ranking.ItemMetrics{im("q", t0, "joins", 1.0)})
	})
}
