package ranking

import (
	"fmt"
	"math"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of an event.
const (
	MaxIDLen   = 128 // bytes
	MaxItemLen = 128 // bytes
	// MaxFuture is how far ahead of now an event's instant may be: a
	// sender's clock a little fast is tolerated, a date in the future is
	// not (it would rank an hour not begun).
	MaxFuture = 5 * time.Minute
)

// CheckEvent validates e for b at now; its errors wrap ErrInvalidEvent.
// The id and the item are 1 to 128 bytes of UTF-8 without control
// characters (they end up in JSON, logs and Redis members); the metric is
// one of b's; the value a number from 0 to MaxValue (metrics only grow: a
// withdrawal is a metric of its own with a negative weight); the instant
// set, at most MaxFuture ahead of now and not older than b's retention,
// whose buckets may already be pruned.
func (b *Board) CheckEvent(e Event, now time.Time) error {
	// (MaxValue keeps a bucket's sum of a billion events finite.)
	if err := b.checkEvent(e, now); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidEvent, err)
	}
	return nil
}

func (b *Board) checkEvent(e Event, now time.Time) error {
	if err := checkText("id", e.ID, MaxIDLen); err != nil {
		return err
	}
	if err := checkText("item", e.Item, MaxItemLen); err != nil {
		return err
	}
	if _, ok := b.Metrics[e.Metric]; !ok {
		return fmt.Errorf("event %q: board %q counts no metric %q", e.ID, b.Name, e.Metric)
	}
	if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) || e.Value < 0 || e.Value > MaxValue {
		return fmt.Errorf("event %q: value %v must be a number from 0 to %g", e.ID, e.Value, MaxValue)
	}
	switch {
	case e.At.IsZero():
		return fmt.Errorf("event %q: at required", e.ID)
	case e.At.After(now.Add(MaxFuture)):
		return fmt.Errorf("event %q: at %s is more than %v ahead of now", e.ID, e.At.UTC().Format(time.RFC3339), MaxFuture)
	case e.At.Before(now.Add(-b.Retention())):
		return fmt.Errorf("event %q: at %s is older than the board's retention (%v)", e.ID, e.At.UTC().Format(time.RFC3339), b.Retention())
	}
	return nil
}

// checkText refuses an empty or too long s, invalid UTF-8 and control
// characters (C0, DEL, C1).
func checkText(what, s string, max int) error {
	if s == "" || len(s) > max {
		return fmt.Errorf("%s: want 1 to %d bytes, have %d", what, max, len(s))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q: not valid UTF-8", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s %q: control character %U", what, s, r)
		}
	}
	return nil
}

// MaxValue bounds one event's value: a bucket summing even a billion of
// them stays a finite float64, so no sum of the record overflows.
const MaxValue = 1e15
