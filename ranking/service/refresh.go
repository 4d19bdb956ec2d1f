package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/internal/redislease"
	"github.com/matchgate/matchgate/ranking"
)

// errLeaseLost: a refresh's fencing token is no longer the lease's.
var errLeaseLost = errors.New("ranking: refresh lease lost")

// boardState is one board's refresh, as this process runs it.
type boardState struct {
	token   int64     // the lease's fencing token; 0 when not held
	until   time.Time // the lease's validity by this process's clock
	due     time.Time // the next refresh
	last    map[ranking.Window]ranking.Period
	pruned  time.Time
	refresh time.Duration
	// fed is a matchmaking board's first hour not final (feed.go), zero
	// until the first feed under the lease; fedSig what it was fed for.
	fed    time.Time
	fedSig string
}

// leaseTTL is a board's lease life: three refreshes, at least 3s, so one
// slow refresh does not lose it and a dead holder is replaced soon.
func leaseTTL(b ranking.Board) time.Duration { return max(3*b.Refresh, 3*time.Second) }

// leaseSlack is how long the lease key outlives the lease, to free memory.
const leaseSlack = 10 * time.Second

func (s *Service) leaseKeys(board string) redislease.Keys {
	tag := s.cfg.Prefix + ":{rank:" + board + "}:"
	return redislease.Keys{Lease: tag + "lease", Fence: tag + "fence"}
}

// Run refreshes every board every board.Refresh (looking every
// Config.Tick) until ctx ends, then gives its leases up and returns nil.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("ranking refresh", "err", err)
		}
		select {
		case <-ctx.Done():
			s.release(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
		}
	}
}

// release gives up every lease held.
func (s *Service) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	for name, st := range s.state {
		if st.token != 0 {
			_, _ = redislease.Release(ctx, s.cfg.Redis, s.leaseKeys(name), s.cfg.Owner, st.token)
			st.token = 0
		}
	}
}

// Tick is one turn of Run: each board due for its refresh (every
// board.Refresh by Now) is refreshed if this process holds or takes its
// lease. The errors of the boards are joined; one board's does not stop
// the others.
func (s *Service) Tick(ctx context.Context) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	names := s.boardNames()
	inForce := make(map[string]bool, len(names))
	var errs []error
	for _, name := range names {
		inForce[name] = true
		b, err := s.board(name)
		if err != nil {
			continue // removed meanwhile
		}
		st := s.state[name]
		if st == nil {
			st = &boardState{last: map[ranking.Window]ranking.Period{}}
			s.state[name] = st
		}
		now := s.cfg.Now()
		if st.refresh != b.Refresh {
			st.refresh, st.due = b.Refresh, time.Time{} // a new rhythm starts now
		}
		if now.Before(st.due) {
			continue
		}
		st.due = now.Add(b.Refresh)
		if !s.hold(ctx, b, st, now) {
			continue
		}
		if err := s.refreshBoard(ctx, b, st, now); err != nil {
			errs = append(errs, err)
		}
	}
	for name, st := range s.state {
		if !inForce[name] {
			if st.token != 0 {
				_, _ = redislease.Release(ctx, s.cfg.Redis, s.leaseKeys(name), s.cfg.Owner, st.token)
			}
			delete(s.state, name)
		}
	}
	return errors.Join(errs...)
}

// hold renews the board's lease, or takes it when not held, and reports
// whether it is held.
func (s *Service) hold(ctx context.Context, b ranking.Board, st *boardState, now time.Time) bool {
	k, ttl := s.leaseKeys(b.Name), leaseTTL(b)
	if st.token != 0 {
		ok, err := redislease.Renew(ctx, s.cfg.Redis, k, s.cfg.Owner, st.token, now, ttl, leaseSlack)
		switch {
		case err != nil && now.Before(st.until):
			// Unknown: still ours until it would have ended.
			s.log.Warn("renew the ranking lease", "board", b.Name, "err", err)
			return true
		case err != nil || !ok:
			s.log.Warn("ranking lease dropped", "board", b.Name, "token", st.token, "err", err)
			st.token = 0
		default:
			st.until = now.Add(ttl)
			return true
		}
	}
	token, err := redislease.Acquire(ctx, s.cfg.Redis, k, s.cfg.Owner, now, ttl, leaseSlack, 0)
	if err != nil {
		s.log.Warn("acquire the ranking lease", "board", b.Name, "err", err)
		return false
	}
	if token == 0 {
		return false
	}
	// A new holder feeds from the retention's start: another may have
	// fed the board meanwhile, with counts this one did not see.
	st.token, st.until, st.fed = token, now.Add(ttl), time.Time{}
	return true
}

// refreshBoard feeds a matchmaking board (feed.go), recomputes the current
// period of each window, and the previous one the first time after a
// period boundary (events of its last moments, counted after its last
// refresh), then prunes the record past the retention once an hour. A
// failed feed leaves the counts before it and the periods are refreshed
// all the same.
func (s *Service) refreshBoard(ctx context.Context, b ranking.Board, st *boardState, now time.Time) error {
	s.refreshes.Add(1)
	var errs []error
	memo := ranks{}
	if err := s.feed(ctx, b, st, now); err != nil {
		if errors.Is(err, errLeaseLost) {
			s.log.Warn("ranking lease taken over", "board", b.Name, "token", st.token)
			st.token = 0
			return nil
		}
		errs = append(errs, err)
	}
	for _, w := range b.Windows {
		cur := ranking.PeriodOf(w, now)
		ps := []ranking.Period{cur}
		if last, ok := st.last[w]; !ok || last != cur {
			ps = append(ps, cur.Prev())
		}
		ok := true
		for _, p := range ps {
			if err := s.refreshPeriod(ctx, b, p, now, st.token, memo); err != nil {
				if errors.Is(err, errLeaseLost) {
					s.log.Warn("ranking lease taken over", "board", b.Name, "token", st.token)
					st.token = 0
					return nil
				}
				errs = append(errs, err)
				ok = false
			}
		}
		if ok {
			st.last[w] = cur
		}
	}
	if now.Sub(st.pruned) >= time.Hour {
		if err := s.cfg.Record.Prune(ctx, b.Name, now.Add(-b.Retention())); err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", b.Name, err))
		} else {
			st.pruned = now
		}
	}
	return errors.Join(errs...)
}

// announcement is what a changed Top N publishes.
type announcement struct {
	Board          string         `json:"board"`
	Window         ranking.Window `json:"window"`
	Period         string         `json:"period"`
	WeightsVersion int64          `json:"weightsVersion"`
}

// refreshPeriod recomputes and stores p's Top N, and announces a change.
func (s *Service) refreshPeriod(ctx context.Context, b ranking.Board, p ranking.Period, now time.Time, token int64, memo ranks) error {
	v, changed, err := s.refresh(ctx, b, p, now, false, token, memo)
	if err != nil {
		return err
	}
	if !changed {
		return nil
	}
	msg, _ := json.Marshal(announcement{Board: b.Name, Window: p.Window, Period: v.Period, WeightsVersion: v.WeightsVersion})
	if err := pubsub.Publish(ctx, s.cfg.Redis, pubsub.Sharded(s.cfg.Redis), s.channel(b.Name, p.Window), msg).Err(); err != nil {
		return fmt.Errorf("announce %s %s: %w", b.Name, p, err)
	}
	return nil
}

// RefreshAll recomputes every retained period of every window of the board
// (those that end after now − retention and have begun), without the lease:
// the writes are ordered by weights version (put.lua), so it may run beside
// a refresh. SetWeights runs it.
func (s *Service) RefreshAll(ctx context.Context, board string) error {
	b, err := s.board(board)
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	from := now.Add(-b.Retention())
	var errs []error
	memo := ranks{}
	for _, w := range b.Windows {
		for p := ranking.PeriodOf(w, now); p.End().After(from); p = p.Prev() {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("recompute %s: %w", board, err)
			}
			if err := s.refreshPeriod(ctx, b, p, now, 0, memo); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
