package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Cross-region offers (ARCHITECTURE.md §6).
//
// A player waits in the pool of their home partition (queue, region). Once
// they have waited OfferAfter (on the wait-order clock), every pass of the
// home engine writes an offer of them into each adjacent region's partition
// (offer.lua: a copy of their entry in the neighbour's "offers" set, with a
// short expiry; one script, the neighbour's keys only). The home engine keeps
// everything else: the player stays in the home pool, the home deadline path
// and ghost check still apply, and the home engine may match them itself at
// any time.
//
// The neighbour's engine reads the live offers and treats them as anchors and
// candidates like its own players, except that a group must seat at least one
// of its own players (a group of offered players only is the home's to
// form). To form a group with offered players it claims its own players with
// its fence and each offered player from the home pool with the ordinary
// claim script, unfenced, pool by pool in name order (so that two neighbours
// reaching for each other's players collide on the first pool, and one of
// them wins whole). The claim on the home pool is the acknowledgement of the
// offer, and it succeeds only while the player is still in the home pool, so
// of the home engine and any neighbour exactly one takes the player out.
// The commit then runs under the neighbour's lease epoch and is the referee
// of last resort: the record's compare-and-set on WAITING seats a ticket in
// one committed match only. The match is hosted in the neighbour's region
// (its server is allocated there), which is what the adjacency list allows.
//
// Failure costs nothing: a lost offer is written again on the next home
// pass, an expired one is simply not seen, an offer of a player who is gone
// fails its claim (the neighbour withdraws it and puts back the players it
// had claimed, with their original scores), and a failed commit returns each
// player to the pool they were claimed from.

// offerTTL is how long an offer lives: a few home passes, so one lost write
// costs a pass, and a stale offer lapses by itself soon after the home stops
// repeating it.
func offerTTL(q *matcher.QueueConfig) time.Duration { return max(3*q.Tick, 2*time.Second) }

// maxOffers bounds the offers written to, and read by, one partition per pass.
const maxOffers = 128

// offerTarget is the partition of region r that receives offers: its only
// pool, or for a sharded queue its overflow pool, where the long waiters are.
func offerTarget(q *matcher.QueueConfig, region string) matcher.Partition {
	p := matcher.Partition{Queue: q.Name, Region: region}
	if q.Sharded() {
		p.Shard = matcher.OverflowShard
	}
	return p
}

// receivesOffers reports whether this engine's pool is an offer target.
func (e *Engine) receivesOffers() bool {
	if !e.plan.Offers() || e.cfg.Shard != offerTarget(e.q, e.cfg.Region).Shard {
		return false
	}
	for _, tos := range e.q.Adjacent {
		for _, to := range tos {
			if to == e.cfg.Region {
				return true
			}
		}
	}
	return false
}

// offers returns the live offers this partition received, not yet used
// this pass.
func (p *pass) offers(ctx context.Context) ([]matcher.Entry, error) {
	if !p.e.receivesOffers() {
		return nil, nil
	}
	es, err := p.e.cfg.Pool.Offers(ctx, p.e.part, p.now, maxOffers)
	if err != nil {
		return nil, fmt.Errorf("read offers: %w", err)
	}
	out := es[:0]
	for _, e := range es {
		if !p.used[e.TicketID] && e.Home != "" && e.Home != p.e.part {
			out = append(out, e)
		}
	}
	return out, nil
}

// offer writes this partition's long waiters, not matched this pass, into
// each adjacent region's offers. Repeated every pass; see the protocol above.
func (p *pass) offer(ctx context.Context) error {
	q := p.e.q
	tos := q.Adjacent[p.e.cfg.Region]
	if len(tos) == 0 || !p.e.plan.Offers() {
		return nil
	}
	olds, err := p.e.cfg.Pool.Oldest(ctx, p.e.part, maxOffers)
	if err != nil {
		return fmt.Errorf("read long waiters: %w", err)
	}
	cutoff := p.now.Add(-q.OfferAfter)
	var es []matcher.Entry
	for _, o := range olds {
		if o.Enqueue.After(cutoff) {
			break // wait order: everyone after is younger
		}
		if !p.used[o.TicketID] && o.UserID != "" {
			es = append(es, o)
		}
	}
	if len(es) == 0 {
		return nil
	}
	for _, to := range tos {
		target := offerTarget(q, to)
		n, err := p.e.cfg.Pool.Offer(ctx, target.String(), p.e.part, es, p.now, p.now.Add(offerTTL(q)))
		if err != nil {
			return fmt.Errorf("offer to %s: %w", target, err)
		}
		p.res.Offered += n
		p.e.cfg.Metrics.moved(q.Name, "offered", n)
	}
	return nil
}

// withdraw removes, after a commit, the offers of the offered players the
// match seated, so that this partition stops considering them at once.
func (p *pass) withdraw(ctx context.Context, group []matcher.Entry) {
	var ids []string
	for _, g := range group {
		if g.Home != "" {
			ids = append(ids, g.TicketID)
		}
	}
	if err := p.e.cfg.Pool.WithdrawOffers(ctx, p.e.part, ids...); err != nil {
		p.e.log.Debug("withdraw used offers", "err", err)
	}
}

// promote moves this sub-pool's players who waited OverflowAfter into the
// region's overflow pool (one script per batch: never in two pools, never
// in none, original scores kept). Only the sub-pools of a sharded queue do.
func (p *pass) promote(ctx context.Context) error {
	q := p.e.q
	if !q.Sharded() || p.e.cfg.Shard == matcher.OverflowShard {
		return nil
	}
	to := matcher.Partition{Queue: q.Name, Region: p.e.cfg.Region, Shard: matcher.OverflowShard}.String()
	moved, err := p.e.cfg.Pool.Promote(ctx, p.e.part, to, p.now.Add(-q.OverflowAfter), 256)
	if err != nil {
		return fmt.Errorf("promote to %s: %w", to, err)
	}
	for _, id := range moved {
		p.used[id] = true
	}
	p.res.Promoted += len(moved)
	p.e.cfg.Metrics.moved(q.Name, "promoted", len(moved))
	return nil
}
