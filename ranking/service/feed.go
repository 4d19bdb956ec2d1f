package service

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/matchgate/matchgate/internal/redislease"
	"github.com/matchgate/matchgate/ranking"
)

// Activity counts matchgate's own activity for the boards of source
// matchmaking: per item (a queue or room topic) per UTC hour of [from, to),
// the metrics joins, matches and cancels and each one's first instant
// (ranking.Tally), as the record of tickets and matches holds them.
// cmd/matchgate adapts the ledger to it.
type Activity interface {
	Activity(ctx context.Context, from, to time.Time) ([]ranking.Tally, error)
}

// FinalGrace is how long after an hour's end it is still recounted: a
// ticket or match stamped by another process reaches the record late by
// its group commit, and that process's clock may run behind this one's.
// Once its end is older than this, an hour is final: this process does
// not count it again while it holds the board's lease.
const FinalGrace = 2 * time.Minute

// feed recounts a matchmaking board's hours from its first hour not final
// up to now from Config.Activity, and replaces them in the record
// (Record.SetHours): each count is the record's, whole, so a recount never
// adds to the one before and nothing is counted twice. The first feed
// after the lease is taken, or after the board's metrics or retention
// changed, starts at now − retention, filling the past of a new board or
// of a restarted server in one count. Only the metrics the board declares
// are written.
//
// The lease is renewed just before the write, and the write skipped when
// it is lost (errLeaseLost). That is a check, not a fence: a holder paused
// between the two writes counts of the same record, which the next
// holder's recount of those hours replaces.
func (s *Service) feed(ctx context.Context, b ranking.Board, st *boardState, now time.Time) error {
	if b.Source != ranking.SourceMatchmaking || s.cfg.Activity == nil {
		return nil
	}
	sig := feedSig(b)
	if st.fedSig != sig {
		st.fed, st.fedSig = time.Time{}, sig
	}
	from := hourOf(now.Add(-b.Retention()))
	if st.fed.After(from) {
		from = st.fed
	}
	to := hourOf(now).Add(time.Hour)
	counted, err := s.cfg.Activity.Activity(ctx, from, to)
	if err != nil {
		return fmt.Errorf("count the activity of %s in [%v, %v): %w", b.Name, from, to, err)
	}
	tallies := make([]ranking.Tally, 0, len(counted))
	for _, t := range counted {
		kept := ranking.Tally{Item: t.Item, Hour: t.Hour, Metrics: map[string]float64{}, First: map[string]time.Time{}}
		for name, v := range t.Metrics {
			if _, ok := b.Metrics[name]; ok && v != 0 {
				kept.Metrics[name], kept.First[name] = v, t.First[name]
			}
		}
		if len(kept.Metrics) > 0 {
			tallies = append(tallies, kept)
		}
	}
	at := s.cfg.Now()
	ok, err := redislease.Renew(ctx, s.cfg.Redis, s.leaseKeys(b.Name), s.cfg.Owner, st.token, at, leaseTTL(b), leaseSlack)
	if err != nil {
		return fmt.Errorf("feed %s: renew the lease: %w", b.Name, err)
	}
	if !ok {
		return fmt.Errorf("feed %s: %w", b.Name, errLeaseLost)
	}
	st.until = at.Add(leaseTTL(b))
	if err := s.cfg.Record.SetHours(ctx, b.Name, from, to, tallies); err != nil {
		return fmt.Errorf("feed %s: %w", b.Name, err)
	}
	if final := hourOf(now.Add(-FinalGrace)); final.After(from) {
		st.fed = final
	} else {
		st.fed = from
	}
	return nil
}

// feedSig is what the hours a board was fed depend on: its metrics and
// its retention.
func feedSig(b ranking.Board) string {
	return strings.Join(slices.Sorted(maps.Keys(b.Metrics)), ",") + "/" + b.Retention().String()
}

// hourOf is the UTC hour of t.
func hourOf(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }
