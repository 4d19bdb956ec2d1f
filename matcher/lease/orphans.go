package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Orphans. The record is the truth, the configuration only says how to
// match: a (queue, region) that holds WAITING tickets or PENDING_ACCEPT
// matches but that no queue in force covers (a queue retired, a region
// removed, and the process restarted since) would otherwise have no engine,
// and its players would be told ALREADY_QUEUED everywhere forever. The
// Runner leases it like any partition, under the (queue, region)'s own
// name, and its holder sweeps it every orphanEvery: nothing is matched any
// more (how to match is what the configuration no longer says), each
// ticket ends EXPIRED at its deadline, each pending match is dissolved when
// its accept window passes (those who accepted go back to WAITING, then
// expire at their deadline), and the pools left in Redis are emptied. A
// player may cancel such a ticket meanwhile as any other.

// orphanEvery is the period of an orphan's sweep.
const orphanEvery = time.Second

// maxShards is the most sub-pools a queue may have (Validate): the
// sub-pools a (queue, region) may have left behind are among s0…s63.
const maxShards = 64

// runOrphan sweeps an orphan (queue, region) until ctx ends.
func (r *Runner) runOrphan(ctx context.Context, base matcher.Partition) {
	t := time.NewTicker(orphanEvery)
	defer t.Stop()
	for {
		if err := r.sweepOrphan(ctx, base, r.cfg.Now()); err != nil && ctx.Err() == nil {
			r.log.Warn("sweep orphan partition", "partition", base.String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepOrphan resolves what is due in an orphan (queue, region) at now.
func (r *Runner) sweepOrphan(ctx context.Context, base matcher.Partition, now time.Time) error {
	var errs []error
	pending, err := r.cfg.Ledger.Pending(ctx, base)
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range pending {
		if m.AcceptBy == nil || now.Before(*m.AcceptBy) {
			continue
		}
		d, events, err := r.cfg.Ledger.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, At: now})
		var se *matcher.MatchStateError
		switch {
		case errors.As(err, &se), errors.Is(err, matcher.ErrNotFound):
			continue // accepted or dissolved meanwhile
		case err != nil:
			errs = append(errs, fmt.Errorf("dissolve %s: %w", m.ID, err))
			continue
		}
		if r.cfg.Allocator != nil && d.Match.Server != nil {
			if err := r.cfg.Allocator.Release(ctx, d.Match.ID, *d.Match.Server); err != nil {
				r.log.Warn("release server of dissolved match", "match", d.Match.ID, "err", err)
			}
		}
		if err := r.cfg.Pool.RemovePending(ctx, base.String(), m.ID); err != nil {
			errs = append(errs, err)
		}
		r.deliver(ctx, events)
		r.log.Info("orphan match dissolved", "partition", base.String(), "match", m.ID)
	}
	waiting, err := r.cfg.Ledger.Waiting(ctx, base)
	if err != nil {
		errs = append(errs, err)
	}
	for _, t := range waiting {
		if now.Before(t.Deadline) {
			continue
		}
		_, events, err := r.cfg.Ledger.Resolve(ctx, t.ID, matcher.StatusExpired, "", now)
		var nw *matcher.NotWaitingError
		switch {
		case errors.As(err, &nw), errors.Is(err, matcher.ErrNotFound):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("expire %s: %w", t.ID, err))
			continue
		}
		r.cfg.Metrics.Outcome(t.Queue, string(matcher.StatusExpired))
		r.deliver(ctx, events)
	}
	// Nobody matches in these pools any more.
	if _, err := r.rehome(ctx, nil, base, now); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("sweep orphan %s: %w", base, errors.Join(errs...))
	}
	return nil
}

func (r *Runner) deliver(ctx context.Context, events []matcher.Event) {
	if r.cfg.Notifier != nil && len(events) > 0 {
		r.cfg.Notifier.Deliver(ctx, events)
	}
}

// rehome empties the pools of the (queue, region) base that q does not
// have (every pool it may have had when q is nil: an orphan): the sub-pools
// a changed shards count left behind, the unsharded pool of a queue now
// sharded, or the sub-pools of one no longer sharded. A ticket taken out
// that is still WAITING in the record goes, with its original scores, to
// the pool its user hashes to under q (a ticket claimed meanwhile is not
// taken out, and one lost between the two steps is added back by the
// reconciler of its new pool). It is run by the holder of the lease of
// base's only or overflow pool, and returns how many tickets it moved.
func (r *Runner) rehome(ctx context.Context, q *matcher.QueueConfig, base matcher.Partition, now time.Time) (int, error) {
	stale := stalePools(q, base)
	// One round trip tells which of them hold anything.
	sizes, err := r.cfg.Pool.Sizes(ctx, stale)
	if err != nil {
		return 0, fmt.Errorf("rehome %s: sizes of retired pools: %w", base, err)
	}
	var record map[string]matcher.Ticket
	moved := 0
	var errs []error
	for i, part := range stale {
		if sizes[i] == 0 {
			continue
		}
		members, err := r.cfg.Pool.Members(ctx, part)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if record == nil && q != nil {
			waiting, err := r.cfg.Ledger.Waiting(ctx, base)
			if err != nil {
				return moved, fmt.Errorf("rehome %s: read record: %w", base, err)
			}
			record = make(map[string]matcher.Ticket, len(waiting))
			for _, t := range waiting {
				record[t.ID] = t
			}
		}
		for _, e := range members {
			res, err := r.cfg.Pool.RemoveEntry(ctx, []string{part}, e)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			t, ok := record[e.TicketID]
			if !res.Removed || !ok {
				continue
			}
			to := q.PoolOf(t.UserID, t.Region)
			ne := matcher.EntryOf(t)
			ne.Heartbeat = now // its heartbeats stayed with the old pool
			if _, err := r.cfg.Pool.Enqueue(ctx, to.String(), ne, matcher.EntryTTL(now, t.Deadline), q.HeartbeatTimeout); err != nil {
				errs = append(errs, err)
				continue
			}
			moved++
		}
		if q != nil {
			r.log.Info("tickets moved out of a retired pool", "from", part, "moved", moved)
		}
	}
	if len(errs) > 0 {
		return moved, fmt.Errorf("rehome %s: %w", base, errors.Join(errs...))
	}
	return moved, nil
}

// stalePools lists the pools base may have had that q does not have.
func stalePools(q *matcher.QueueConfig, base matcher.Partition) []string {
	current := map[string]bool{}
	if q != nil {
		for _, p := range q.Pools(base.Region) {
			current[p.String()] = true
		}
	}
	all := []string{base.String(), matcher.Partition{Queue: base.Queue, Region: base.Region, Shard: matcher.OverflowShard}.String()}
	for i := range maxShards {
		all = append(all, matcher.Partition{Queue: base.Queue, Region: base.Region, Shard: "s" + strconv.Itoa(i)}.String())
	}
	var out []string
	for _, part := range all {
		if !current[part] {
			out = append(out, part)
		}
	}
	return out
}
