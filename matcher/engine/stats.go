package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/plan"
	"github.com/matchgate/matchgate/matcher/pool"
)

// Estimates from recent real waits. Every engine records, per (queue,
// region), each ticket it resolves (when, how long it waited since its real
// join, and whether the window, the deadline or nobody resolved it) and each
// match it forms, in two capped Redis lists (pool.StatsCap entries each).
// From them:
//
//	samples          = tickets resolved within statsHorizon (1 h)
//	wait pXX         = nearest-rank percentile of their waits
//	                   (value at rank ⌈XX/100 · n⌉ of the sorted waits)
//	timeout fraction = (TIMEOUT-matched + EXPIRED) / samples
//	matches/minute   = matches formed within rateWindow (5 min) / 5; when the
//	                   capped list does not reach back that far, matches kept
//	                   / minutes they span
//	estimated wait   = p50
const (
	statsHorizon = time.Hour
	rateWindow   = 5 * time.Minute
)

// computeStats turns recorded outcomes into QueueStats as of now.
func computeStats(outcomes []pool.Outcome, matches []time.Time, now time.Time) matcher.QueueStats {
	var st matcher.QueueStats
	var waits []float64
	timeouts := 0
	for _, o := range outcomes {
		if now.Sub(o.At) > statsHorizon {
			continue
		}
		waits = append(waits, o.Wait.Seconds())
		if o.Kind == pool.OutcomeTimeout || o.Kind == pool.OutcomeExpired {
			timeouts++
		}
	}
	st.Samples = len(waits)
	if len(waits) > 0 {
		slices.Sort(waits)
		st.Wait = &matcher.WaitPercentiles{P50: rank(waits, 50), P90: rank(waits, 90), P99: rank(waits, 99)}
		p50 := st.Wait.P50
		st.EstimatedWait = &p50
		st.TimeoutFraction = float64(timeouts) / float64(len(waits))
	}
	recent := 0
	oldest := now
	for _, at := range matches {
		if now.Sub(at) <= rateWindow {
			recent++
			if at.Before(oldest) {
				oldest = at
			}
		}
	}
	switch {
	case recent == 0:
	case recent >= pool.StatsCap && now.Sub(oldest) > 0:
		// The list is full within the window: the rate over what it spans.
		st.MatchesPerMinute = float64(recent) / now.Sub(oldest).Minutes()
	default:
		st.MatchesPerMinute = float64(recent) / rateWindow.Minutes()
	}
	return st
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []float64, pct float64) float64 {
	i := int(math.Ceil(pct/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// statsFresh is how long a summary is reused: GET of a waiting ticket is
// also the polling fallback, and must not re-read the lists on every poll.
const statsFresh = time.Second

// statsCache keeps recent summaries, by queue and regions.
type statsCache struct {
	mu sync.Mutex
	m  map[string]cachedStats
}

type cachedStats struct {
	at time.Time
	st matcher.QueueStats
}

// regionStats reads and summarises the outcomes of some regions of a queue,
// reusing a summary younger than statsFresh.
func (s *Service) regionStats(ctx context.Context, q *matcher.QueueConfig, regions []string) (matcher.QueueStats, error) {
	now := s.cfg.Now()
	key := q.Name + "\x00" + strings.Join(regions, "\x00")
	s.stats.mu.Lock()
	c, ok := s.stats.m[key]
	s.stats.mu.Unlock()
	if ok && now.Sub(c.at) >= 0 && now.Sub(c.at) < statsFresh {
		return c.st, nil
	}
	st, err := s.readStats(ctx, q, regions, now)
	if err != nil {
		return matcher.QueueStats{}, err
	}
	s.stats.mu.Lock()
	if s.stats.m == nil || len(s.stats.m) > 1000 {
		s.stats.m = map[string]cachedStats{}
	}
	s.stats.m[key] = cachedStats{at: now, st: st}
	s.stats.mu.Unlock()
	return st, nil
}

func (s *Service) readStats(ctx context.Context, q *matcher.QueueConfig, regions []string, now time.Time) (matcher.QueueStats, error) {
	var (
		outs    []pool.Outcome
		matches []time.Time
	)
	for _, r := range regions {
		o, m, err := s.cfg.Pool.Stats(ctx, matcher.Partition{Queue: q.Name, Region: r}.String())
		if err != nil {
			return matcher.QueueStats{}, err
		}
		outs = append(outs, o...)
		matches = append(matches, m...)
	}
	return computeStats(outs, matches, now), nil
}

// explain says why a WAITING ticket has no match yet.
func (s *Service) explain(ctx context.Context, q *matcher.QueueConfig, t matcher.Ticket) (*matcher.Explain, error) {
	now := s.cfg.Now()
	x := &matcher.Explain{Waited: max(0, now.Sub(t.EnqueuedAt).Seconds())}
	var pools []string
	for _, p := range q.Pools(t.Region) {
		pools = append(pools, p.String())
	}
	where, e, found, err := s.cfg.Pool.Locate(ctx, pools, t.ID)
	if err != nil {
		return nil, err
	}
	if !found {
		// Waiting in the record, not in the pool: claimed for a match
		// being formed this very moment (or about to be re-added by the
		// reconciler).
		e = matcher.EntryOf(t)
		where = q.PoolOf(t.UserID, t.Region).String()
	}
	x.Overflow = q.Sharded() && where == matcher.Partition{Queue: q.Name, Region: t.Region, Shard: matcher.OverflowShard}.String()
	wait := now.Sub(e.Enqueue)
	if len(q.Adjacent[t.Region]) > 0 && plan.PlannerOf(q).Offers() && wait >= q.OfferAfter {
		x.OfferedTo = slices.Clone(q.Adjacent[t.Region])
	}

	planner := plan.PlannerOf(q)
	read, w := planner.Explain(q, e, now)
	x.Window = w
	if read.Kind == plan.ReadSize {
		n, err := s.cfg.Pool.Size(ctx, where)
		if err != nil {
			return nil, err
		}
		x.CandidatesInWindow = max(0, int(n)-1)
	} else {
		cands, err := readPool(ctx, s.cfg.Pool, where, read)
		if err != nil {
			return nil, err
		}
		for _, c := range cands {
			if c.TicketID == t.ID || c.UserID == t.UserID || c.UserID == "" {
				continue
			}
			if planner.InWindow(q, e, c, now) {
				x.CandidatesInWindow++
			}
		}
	}
	x.PlayersNeeded = max(0, q.Players-1-x.CandidatesInWindow)
	if q.Kind == matcher.KindProvider {
		if err := s.explainProvider(ctx, q, t, e, x, now); err != nil {
			return nil, err
		}
	}
	failing, err := s.cfg.Pool.AllocationFailing(ctx, where, now)
	if err != nil {
		return nil, err
	}
	switch {
	case !found:
	case failing:
		x.Missing = matcher.MissingAllocation
	case q.Kind == matcher.KindProvider:
		if x.NoProvider != "" {
			x.Missing = matcher.MissingProvider
		}
	case x.PlayersNeeded > 0:
		x.Missing = matcher.MissingPlayers
	default:
		x.Missing = matcher.MissingCoherence
	}
	st, err := s.regionStats(ctx, q, []string{t.Region})
	if err != nil {
		return nil, fmt.Errorf("wait estimate: %w", err)
	}
	x.EstimatedWait = st.EstimatedWait
	return x, nil
}
