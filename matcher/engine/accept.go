package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// The accept window (ARCHITECTURE.md §5). A queue with AcceptWindow > 0
// commits its matches PENDING_ACCEPT with AcceptBy = formed + window; the
// record holds who accepted (Ledger.Accept, a compare-and-set on the match
// row). When the last player accepts the match is READY and match.ready
// carries the server. A decline (Service.Decline) or the window passing (the
// engine of the match's (queue, region) checks the pending index every pass)
// dissolves it in one transaction (Ledger.Dissolve); then, outside the
// transaction and each step repairable:
//
//   - the players going back to WAITING return to the pool with their
//     original scores (Requeue; the reconciler re-adds them if this is lost),
//   - the server is released,
//   - decliners and silent players get the queue's join cooldown,
//   - the match leaves the pending index (the reconciler rebuilds the index
//     from Ledger.Pending),
//   - the events are published (the relay publishes what this misses).

// afterDissolve carries out those steps for a dissolution the record
// committed, and returns the pools it put players back into.
func (deps Deps) afterDissolve(ctx context.Context, log *slog.Logger, q *matcher.QueueConfig,
	d matcher.Dissolution, events []matcher.Event, reason string, now time.Time) []matcher.Partition {
	p, alloc, n, m := deps.Pool, deps.Allocator, deps.Notifier, deps.Metrics
	byPool := map[matcher.Partition][]matcher.Entry{}
	var order []matcher.Partition
	for _, t := range d.Requeued {
		e := matcher.EntryOf(t)
		// They were just asked to accept: count that as a sign of life, so
		// the ghost check gives them a full heartbeat timeout again.
		e.Heartbeat = now
		part := q.PoolOf(t.UserID, t.Region)
		if byPool[part] == nil {
			order = append(order, part)
		}
		byPool[part] = append(byPool[part], e)
	}
	for _, part := range order {
		es := byPool[part]
		if _, err := p.Requeue(ctx, part.String(), es, requeueTTL(now, es), now, q.HeartbeatTimeout); err != nil {
			log.Warn("requeue after dissolve; left to the reconciler", "match", d.Match.ID, "err", err)
		}
	}
	if alloc != nil && d.Match.Server != nil {
		if err := alloc.Release(ctx, d.Match.ID, *d.Match.Server); err != nil {
			log.Warn("release server of dissolved match", "match", d.Match.ID, "server", d.Match.Server.Address, "err", err)
		}
	}
	if q.DeclineCooldown > 0 {
		for _, t := range d.Cancelled {
			if t.CancelReason != matcher.ReasonDeclined && t.CancelReason != matcher.ReasonAcceptTimeout {
				continue
			}
			if err := p.SetCooldown(ctx, q.Name, t.UserID, now, q.DeclineCooldown); err != nil {
				log.Warn("set join cooldown", "user", t.UserID, "err", err)
			}
		}
	}
	base := matcher.Partition{Queue: d.Match.Queue, Region: d.Match.Region}
	if err := p.RemovePending(ctx, base.String(), d.Match.ID); err != nil {
		log.Warn("remove dissolved match from the pending index", "match", d.Match.ID, "err", err)
	}
	deps.endAssignment(ctx, log, d.Match, reason, now)
	m.acceptOutcome(q.Name, reason)
	if n != nil && len(events) > 0 {
		n.Deliver(ctx, events)
	}
	return order
}

// requeueTTL is the hash TTL of entries going back to the pool.
func requeueTTL(now time.Time, es []matcher.Entry) time.Duration {
	var last time.Time
	for _, e := range es {
		if e.Deadline.After(last) {
			last = e.Deadline
		}
	}
	return matcher.EntryTTL(now, last)
}

// closeAcceptWindows dissolves the pending matches of the (queue, region)
// whose accept window has passed: the players who accepted go back with
// their places, the others end CANCELLED (accept_timeout). The matches are
// dissolved concurrently, so that the record commits them together (its
// decisions are group-committed) and the pass waits for about one commit
// instead of one per match.
func (p *pass) closeAcceptWindows(ctx context.Context) error {
	ids, err := p.e.cfg.Pool.PendingDue(ctx, p.e.base, p.now, pendingBatch)
	if err != nil {
		return fmt.Errorf("read pending matches: %w", err)
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		dissolved int
		errs      []error
	)
	for _, id := range ids {
		wg.Go(func() {
			ok, err := p.closeAcceptWindow(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				dissolved++
			}
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	p.res.Dissolved += dissolved
	return errors.Join(errs...)
}

// pendingBatch bounds the accept windows one pass closes.
const pendingBatch = 64

// closeAcceptWindow dissolves one match whose window has passed, and reports
// whether it did.
func (p *pass) closeAcceptWindow(ctx context.Context, id string) (bool, error) {
	d, events, err := p.e.cfg.Ledger.Dissolve(ctx, matcher.DissolveRequest{MatchID: id, At: p.now})
	var se *matcher.MatchStateError
	switch {
	case errors.As(err, &se) && se.Match.State == matcher.MatchPendingAccept:
		// The record's window has not passed yet (the index is a
		// millisecond coarser than the record): the next pass.
		return false, nil
	case errors.As(err, &se), errors.Is(err, matcher.ErrNotFound):
		// READY or already DISSOLVED: only the index was stale.
		if err := p.e.cfg.Pool.RemovePending(ctx, p.e.base, id); err != nil {
			return false, fmt.Errorf("remove pending %s: %w", id, err)
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("dissolve match %s: %w", id, err)
	}
	p.e.cfg.afterDissolve(ctx, p.e.log, p.e.q, d, events, matcher.ReasonAcceptTimeout, p.now)
	return true, nil
}
