package record

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/ranking"
)

// Both implementations pass every input through the functions of this file
// before touching storage, so that they accept and refuse the same values
// and store identical ones.

// checkEvents refuses a batch holding an event no board could accept. The
// board's own rules (its metrics, its lengths) are Board.CheckEvent's, run
// by the caller; these are the ones the record itself relies on. Postgres
// shares one statement between callers (ingest.go), so anything
// PostgreSQL would refuse — a NUL byte or invalid UTF-8 in a text, a time
// beyond timestamptz — is refused here first: one caller's bad event must
// not fail the others'.
func checkEvents(board string, events []ranking.Event) error {
	if !storable(board) {
		return fmt.Errorf("ingest into %q: no board, or not storable text: %w", board, ranking.ErrInvalidEvent)
	}
	for i, e := range events {
		var why string
		switch {
		case e.ID == "":
			why = "no id"
		case e.Item == "":
			why = "no item"
		case e.Metric == "":
			why = "no metric"
		case !storable(e.ID) || !storable(e.Item) || !storable(e.Metric):
			why = "a NUL byte or invalid UTF-8"
		case e.At.IsZero():
			why = "no time"
		case e.At.UTC().Year() < minYear || e.At.UTC().Year() > maxYear:
			why = fmt.Sprintf("time %v out of range", e.At)
		case math.IsNaN(e.Value) || math.IsInf(e.Value, 0) || e.Value < 0:
			why = fmt.Sprintf("value %v is not a finite number ≥ 0", e.Value)
		}
		if why != "" {
			return fmt.Errorf("ingest into %s: event %d (%q): %s: %w", board, i, e.ID, why, ranking.ErrInvalidEvent)
		}
	}
	return nil
}

// The years an event's time may have: those of RFC 3339, as its JSON.
const minYear, maxYear = 1, 9999

// storable reports whether s is text PostgreSQL stores: not empty, UTF-8,
// no NUL byte.
func storable(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// hourOf is the bucket of an instant: its hour in UTC.
func hourOf(at time.Time) time.Time { return at.UTC().Truncate(time.Hour) }

// stampEvent is e as the record keeps it.
func stampEvent(e ranking.Event) ranking.Event {
	e.At = pgtime.Stamp(e.At)
	return e
}

// checkWeights refuses weights the record could not store as given.
func checkWeights(board string, w ranking.Weights) error {
	switch {
	case board == "":
		return fmt.Errorf("set weights: no board")
	case !storable(board):
		return fmt.Errorf("set weights of %q: not storable text", board)
	case w.By != "" && !storable(w.By):
		return fmt.Errorf("set weights of %s: who set them is not storable text", board)
	case w.At.IsZero():
		return fmt.Errorf("set weights of %s: no time", board)
	case w.At.UTC().Year() < minYear || w.At.UTC().Year() > maxYear:
		return fmt.Errorf("set weights of %s: time %v out of range", board, w.At)
	}
	for name, m := range w.Metrics {
		if !storable(name) {
			return fmt.Errorf("set weights of %s: metric %q: not storable text", board, name)
		}
		if math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0) {
			return fmt.Errorf("set weights of %s: metric %s: weight %v is not finite", board, name, m.Weight)
		}
	}
	return nil
}

// copyMetrics is ms as a record returns it: never nil, never shared.
func copyMetrics(ms map[string]ranking.Metric) map[string]ranking.Metric {
	out := make(map[string]ranking.Metric, len(ms))
	for k, v := range ms {
		out[k] = v
	}
	return out
}

// bucketKey names one bucket of a board.
type bucketKey struct {
	item, metric string
	hour         time.Time
}

// bucket is one bucket's content.
type bucket struct {
	value float64
	first time.Time
}

// tallyRow is one bucket SetHours writes.
type tallyRow struct {
	key bucketKey
	bucket
}

// checkTallies refuses a SetHours no board could ask for, and returns the
// buckets it writes (stamped, metrics of value 0 left out) in key order.
func checkTallies(board string, from, to time.Time, tallies []ranking.Tally) ([]tallyRow, error) {
	fail := func(format string, args ...any) ([]tallyRow, error) {
		return nil, fmt.Errorf("set hours of %q: %s: %w", board, fmt.Sprintf(format, args...), ranking.ErrInvalidTally)
	}
	switch {
	case !storable(board):
		return fail("no board, or not storable text")
	case !onTheHour(from) || !onTheHour(to):
		return fail("span [%v, %v) not on the hour", from, to)
	case to.Before(from):
		return fail("span [%v, %v) reversed", from, to)
	}
	from, to = from.UTC(), to.UTC()
	type itemHour struct {
		item string
		hour time.Time
	}
	seen := make(map[itemHour]bool)
	var rows []tallyRow
	for i, t := range tallies {
		switch {
		case !storable(t.Item):
			return fail("tally %d: no item, or not storable text", i)
		case !onTheHour(t.Hour):
			return fail("tally %d (%s): hour %v not on the hour", i, t.Item, t.Hour)
		case t.Hour.Before(from) || !t.Hour.Before(to):
			return fail("tally %d (%s): hour %v outside [%v, %v)", i, t.Item, t.Hour, from, to)
		}
		hour := t.Hour.UTC()
		if seen[itemHour{item: t.Item, hour: hour}] {
			return fail("tally %d (%s): hour %v tallied twice", i, t.Item, hour)
		}
		seen[itemHour{item: t.Item, hour: hour}] = true
		for metric, v := range t.Metrics {
			first := t.First[metric]
			switch {
			case !ranking.ValidMetricName(metric):
				return fail("tally %d (%s): metric %q: name must match ^[a-z][a-z0-9_]{0,31}$", i, t.Item, metric)
			case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
				return fail("tally %d (%s): metric %s: value %v is not a finite number ≥ 0", i, t.Item, metric, v)
			case v == 0:
				continue
			case first.Before(hour) || !first.Before(hour.Add(time.Hour)):
				return fail("tally %d (%s): metric %s: first %v not within its hour %v", i, t.Item, metric, first, hour)
			}
			k := bucketKey{item: t.Item, metric: metric, hour: hour}
			rows = append(rows, tallyRow{key: k, bucket: bucket{value: v, first: pgtime.Stamp(first)}})
		}
	}
	slices.SortFunc(rows, func(a, b tallyRow) int {
		return cmp.Or(cmp.Compare(a.key.item, b.key.item), cmp.Compare(a.key.metric, b.key.metric), a.key.hour.Compare(b.key.hour))
	})
	return rows, nil
}

// onTheHour reports whether t is the start of a UTC hour.
func onTheHour(t time.Time) bool { return !t.IsZero() && t.Equal(hourOf(t)) }
