package pool

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Recent outcomes of a (queue, region), kept as two capped lists under its
// hash tag, newest first: one entry per resolved ticket ("<at ms> <wait ms>
// <kind>") and one per formed match ("<at ms>"). They feed the estimated
// wait, the wait percentiles, the match rate and the timeout fraction; like
// everything in Redis they may be lost, and only make estimates worse.

// StatsCap is how many entries each list keeps.
const StatsCap = 1000

// Outcome kinds.
const (
	OutcomeMatched = "M" // matched by the window (FILLED, FALLBACK)
	OutcomeTimeout = "T" // matched by the deadline (TIMEOUT)
	OutcomeExpired = "E" // nobody to match by the deadline
)

// Outcome is one resolved ticket.
type Outcome struct {
	At   time.Time
	Wait time.Duration
	Kind string
}

// RecordOutcomes appends resolved tickets and formed matches (their times)
// in one round trip.
func (p *Pool) RecordOutcomes(ctx context.Context, partition string, matchAts []time.Time, outcomes []Outcome) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("record outcomes: %w", err)
	}
	tag, _ := splitPartition(partition)
	pipe := p.rdb.Pipeline()
	if len(outcomes) > 0 {
		vals := make([]any, len(outcomes))
		for i, o := range outcomes {
			vals[i] = msTime(o.At) + " " + strconv.FormatInt(o.Wait.Milliseconds(), 10) + " " + o.Kind
		}
		pipe.LPush(ctx, p.Key(tag, "waits"), vals...)
		pipe.LTrim(ctx, p.Key(tag, "waits"), 0, StatsCap-1)
	}
	if len(matchAts) > 0 {
		vals := make([]any, len(matchAts))
		for i, at := range matchAts {
			vals[i] = msTime(at)
		}
		pipe.LPush(ctx, p.Key(tag, "matches"), vals...)
		pipe.LTrim(ctx, p.Key(tag, "matches"), 0, StatsCap-1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("record outcomes of %s: %w", tag, err)
	}
	return nil
}

// Stats returns the recorded outcomes and match times of a (queue, region),
// newest first. Entries it cannot read are skipped.
func (p *Pool) Stats(ctx context.Context, partition string) (outcomes []Outcome, matches []time.Time, err error) {
	if err := checkPartition(partition); err != nil {
		return nil, nil, fmt.Errorf("stats: %w", err)
	}
	tag, _ := splitPartition(partition)
	pipe := p.rdb.Pipeline()
	w := pipe.LRange(ctx, p.Key(tag, "waits"), 0, -1)
	m := pipe.LRange(ctx, p.Key(tag, "matches"), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, fmt.Errorf("stats of %s: %w", tag, err)
	}
	for _, s := range w.Val() {
		f := strings.Fields(s)
		if len(f) != 3 {
			continue
		}
		at, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		outcomes = append(outcomes, Outcome{At: time.UnixMilli(at), Wait: time.Duration(wait) * time.Millisecond, Kind: f[2]})
	}
	for _, s := range m.Val() {
		if at, err := strconv.ParseInt(s, 10, 64); err == nil {
			matches = append(matches, time.UnixMilli(at))
		}
	}
	return outcomes, matches, nil
}
