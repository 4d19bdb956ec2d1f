package record

import (
	"fmt"
	"math"
	"time"

	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/ranking"
)

// Both implementations pass every input through the functions of this file
// before touching storage, so that they accept and refuse the same values
// and store identical ones.

// checkEvents refuses a batch holding an event no board could accept. The
// board's own rules (its metrics, its lengths) are Board.CheckEvent's, run
// by the caller; these are the ones the record itself relies on.
func checkEvents(board string, events []ranking.Event) error {
	if board == "" {
		return fmt.Errorf("ingest: no board: %w", ranking.ErrInvalidEvent)
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
		case e.At.IsZero():
			why = "no time"
		case math.IsNaN(e.Value) || math.IsInf(e.Value, 0) || e.Value < 0:
			why = fmt.Sprintf("value %v is not a finite number ≥ 0", e.Value)
		}
		if why != "" {
			return fmt.Errorf("ingest into %s: event %d (%q): %s: %w", board, i, e.ID, why, ranking.ErrInvalidEvent)
		}
	}
	return nil
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
	case w.At.IsZero():
		return fmt.Errorf("set weights of %s: no time", board)
	}
	for name, m := range w.Metrics {
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
