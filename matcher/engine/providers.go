package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/plan"
	"github.com/matchgate/matchgate/provider"
)

// Provider queues (ARCHITECTURE.md §6). A requester joins as a player
// does and waits in the pool; each pass of its partition reads the oldest
// provider.BatchMax, the providers the live pool holds (Deps.Providers),
// and lets the provider planner choose. A chosen pair becomes a match of
// one player with a provider seat, on the path every match takes — the
// claim in the pool, then, in place of a server, a slot: the live pool's
// Hold (atomic in Redis) and the record of assignments' Offer (durable,
// refusing a provider past its capacity whatever Redis believed), then the
// one commit of the pass. With an accept window the match is
// PENDING_ACCEPT and only the provider may accept it (the ledger's rule);
// a decline or the window passing puts the requester back in place, as a
// dissolved match puts back whoever did nothing wrong, and frees the slot
// (afterDissolve). assignment.end frees it once the session is over.

// prefsCache holds the preferences of the requesters a partition's passes
// read: a ticket's attributes never change, and reading them from the
// record on every pass would cost a read per requester per pass.
type prefsCache struct {
	mu sync.Mutex
	m  map[string]provider.Preferences
	// told is how many of the queue's relax entries each requester was
	// last told of (a ticket.update when its wait drops one).
	told map[string]int
}

// relaxedNow returns the tickets of es whose wait at now has dropped more
// constraints than they were told of, with those constraints, and notes
// them told; a requester first seen already past a relax is told at once.
func (c *prefsCache) relaxedNow(q *matcher.QueueConfig, es []matcher.Entry, now time.Time) map[string][]string {
	if len(q.Relax) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.told == nil {
		c.told = map[string]int{}
	}
	var out map[string][]string
	for _, e := range es {
		n := 0
		for _, r := range q.Relax {
			if now.Sub(e.Enqueue) >= r.After {
				n++
			}
		}
		if n > c.told[e.TicketID] {
			if out == nil {
				out = map[string][]string{}
			}
			for _, r := range q.Relax[:n] {
				out[e.TicketID] = append(out[e.TicketID], r.Drop)
			}
		}
		c.told[e.TicketID] = n
	}
	return out
}

// forgetTold drops the told counts of tickets not in keep.
func (c *prefsCache) forgetTold(keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.told {
		if !keep[id] {
			delete(c.told, id)
		}
	}
}

// prefsReads bounds the record reads one pass makes at once for the
// preferences of requesters it sees for the first time.
const prefsReads = 16

// of returns the preferences of es, reading those it does not hold from
// the record; with forget (a pass's first read) it forgets the tickets es
// does not hold. A ticket the record does not know is left out (the pass
// restores it).
func (c *prefsCache) of(ctx context.Context, l matcher.Ledger, es []matcher.Entry, forget bool) (map[string]provider.Preferences, error) {
	out := make(map[string]provider.Preferences, len(es))
	var missing []string
	c.mu.Lock()
	for _, e := range es {
		if p, ok := c.m[e.TicketID]; ok {
			out[e.TicketID] = p
		} else {
			missing = append(missing, e.TicketID)
		}
	}
	c.mu.Unlock()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
		sem  = make(chan struct{}, prefsReads)
	)
	for _, id := range missing {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t, err := l.Ticket(ctx, id)
			if errors.Is(err, matcher.ErrNotFound) {
				return
			}
			var p provider.Preferences
			if err == nil {
				// The join refused attributes that do not parse; a ticket
				// written before the queue was a provider queue asks nothing.
				p, _ = provider.PreferencesOf(t.Attributes)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("preferences of %s: %w", id, err))
				return
			}
			out[id] = p
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if forget || c.m == nil {
		c.m = make(map[string]provider.Preferences, len(out))
	}
	maps.Copy(c.m, out) // the tickets read this pass, still waiting
	c.mu.Unlock()
	return out, nil
}

// assign is the choose step of a provider queue's pass. It reads on past
// the oldest provider.BatchMax while slots are left and the line is
// longer, up to assignRounds reads: a line whose head nobody online can
// serve must not leave free slots idle for the requesters behind it.
func (p *pass) assign(ctx context.Context) error {
	q, d := p.e.q, p.e.cfg
	if d.Providers == nil || d.Assignments == nil {
		return nil // a server without a provider pool forms nothing here
	}
	var (
		providers []provider.Provider
		at        map[string]int
		waiting   int64
	)
	seen := map[string]bool{}
	relaxed := map[string][]string{}
	defer func() {
		p.e.prefs.forgetTold(seen)
		p.tellRelaxed(ctx, relaxed)
	}()
	head := p.oldest
	for round := 1; ; round++ {
		var reqs []matcher.Entry
		for _, a := range head {
			if seen[a.TicketID] {
				continue
			}
			seen[a.TicketID] = true
			if bare, err := p.restoreBare(ctx, a); err != nil {
				return err
			} else if !bare && !p.used[a.TicketID] {
				reqs = append(reqs, a)
			}
		}
		if len(reqs) == 0 {
			if round == 1 {
				d.Metrics.shedTier(q.Name, p.e.cfg.Region, 0) // nobody waits: nothing shed
			}
			return nil // and the providers are not read
		}
		maps.Copy(relaxed, p.e.prefs.relaxedNow(q, reqs, p.now))
		ids := make([]string, len(reqs))
		for i, r := range reqs {
			ids[i] = r.TicketID
		}
		// The reads of a round are independent: in parallel, so that a
		// pass waits for the slowest rather than their sum.
		var (
			wg      sync.WaitGroup
			prefs   map[string]provider.Preferences
			refused map[string][]string
			errs    [4]error
		)
		if round == 1 {
			wg.Go(func() {
				if providers, errs[0] = d.Providers.Snapshot(ctx, q.Name, p.now); errs[0] != nil {
					errs[0] = fmt.Errorf("read the providers of %s: %w", q.Name, errs[0])
				}
			})
			wg.Go(func() {
				if waiting, errs[1] = d.Pool.Size(ctx, p.e.part); errs[1] != nil {
					errs[1] = fmt.Errorf("count the requesters of %s: %w", p.e.part, errs[1])
				}
			})
		}
		wg.Go(func() { prefs, errs[2] = p.e.prefs.of(ctx, d.Ledger, reqs, round == 1) })
		wg.Go(func() {
			if refused, errs[3] = d.Assignments.Refused(ctx, q.Name, ids); errs[3] != nil {
				errs[3] = fmt.Errorf("read the refusals of %s: %w", q.Name, errs[3])
			}
		})
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			return err
		}
		if round == 1 {
			p.capacity = make(map[string]int, len(providers))
			at = make(map[string]int, len(providers))
			for i, pr := range providers {
				p.capacity[pr.UserID] = pr.Capacity
				at[pr.UserID] = i
			}
		}
		chosen := p.e.plan.Choose(q, plan.Round{Anchors: reqs, Now: p.now, Providers: providers, Prefs: prefs,
			Waiting: int(waiting), Refused: refused, Used: func(id string) bool { return p.used[id] }})
		if round == 1 {
			d.Metrics.shedTier(q.Name, p.e.cfg.Region, chosen.Tier)
		}
		// A pass's commit carries at most passSeats: a larger one kept the
		// offers it formed first waiting for it, their windows running.
		// The oldest picks stay; the rest are the next pass's, at once.
		full := false
		if room := passSeats - p.seats(); len(chosen.Groups) >= room {
			chosen.Groups, full = chosen.Groups[:max(room, 0)], true
			p.e.Wake()
		}
		for _, g := range chosen.Groups {
			for _, e := range g.Entries {
				p.used[e.TicketID] = true
			}
			// The next round sees the slots this one took.
			providers[at[g.Provider.UserID]].Used++
		}
		if _, err := p.formMany(ctx, chosen.Groups, 0); err != nil {
			return err
		}
		if full {
			return nil
		}
		free := 0
		for _, pr := range providers {
			free += pr.Free()
		}
		read := round * provider.BatchMax
		if free == 0 || len(head) < read || round == assignRounds {
			return nil
		}
		var err error
		if head, err = p.read(ctx, plan.Read{Kind: plan.ReadOldest, N: read + provider.BatchMax}); err != nil {
			return fmt.Errorf("read on past the oldest %d: %w", read, err)
		}
	}
}

// tellRelaxed pushes each requester whose wait dropped a constraint this
// pass a ticket.update naming the constraints dropped so far, unless it
// was matched by the pass: advisory (not in the outbox), as the ticket
// itself is unchanged; GET /v1/tickets/{id} says the same in explain.
func (p *pass) tellRelaxed(ctx context.Context, relaxed map[string][]string) {
	n := p.e.cfg.Notifier
	if n == nil || len(relaxed) == 0 {
		return
	}
	var events []matcher.Event
	for id, drops := range relaxed {
		if p.used[id] {
			continue // matched (or resolved) this pass: the match says more
		}
		t, err := p.e.cfg.Ledger.Ticket(ctx, id)
		if err != nil || t.Status != matcher.StatusWaiting {
			continue
		}
		t.Relaxed = drops
		events = append(events, matcher.TicketUpdatedEvent(t))
	}
	if len(events) > 0 {
		n.Deliver(ctx, events)
	}
}

// assignRounds bounds the reads of one provider pass: 2,048 requesters.
const assignRounds = 4

// slotsInFlight bounds the live pool's holds one pass sends at once.
const slotsInFlight = 16

// stageSlots takes each claimed group's slot, in place of a server: the
// live pool's Hold, then the record's Offer, all of the pass's in one
// transaction (OfferMany). A group without one goes back to the pool with
// its place, and the slot, if held, is freed.
func (p *pass) stageSlots(ctx context.Context, st []staged) {
	q, d := p.e.q, p.e.cfg
	held := make([]bool, len(st))
	var wg sync.WaitGroup
	sem := make(chan struct{}, slotsInFlight)
	for i := range st {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			m := st[i].m
			ok, err := d.Providers.Hold(ctx, q.Name, m.Provider.UserID, m.ID, p.now)
			if err != nil {
				p.e.log.Warn("hold a provider's slot", "match", m.ID, "provider", m.Provider.UserID, "err", err)
			}
			if !ok || err != nil {
				d.Metrics.slot(q.Name, "full")
			}
			held[i] = ok && err == nil
		})
	}
	wg.Wait()
	// The offer is made now, the slots taken, not at the pass's start: the
	// provider's time to answer is not spent by the pass, and the record
	// never shows an offer begun before the end of the session whose slot
	// it took.
	offeredAt := p.e.cfg.Now().UTC().Truncate(time.Microsecond)
	if q.AcceptWindow > 0 {
		by := offeredAt.Add(q.AcceptWindow)
		for i := range st {
			st[i].m.AcceptBy = &by
		}
	}
	var reqs []provider.OfferRequest
	var at []int
	for i, s := range st {
		if held[i] {
			reqs = append(reqs, provider.OfferRequest{Assignment: assignmentOf(s.m, offeredAt), Capacity: p.capacity[s.m.Provider.UserID]})
			at = append(at, i)
		}
	}
	offered := make([]bool, len(st))
	if len(reqs) > 0 {
		res, err := d.Assignments.OfferMany(ctx, reqs)
		if err != nil {
			p.e.log.Warn("record the pass's assignments", "offers", len(reqs), "err", err)
		}
		for k, i := range at {
			switch {
			case err != nil:
			case res[k].Err == nil:
				offered[i] = true
				d.Metrics.slot(q.Name, "taken")
			case errors.Is(res[k].Err, provider.ErrOverCapacity), errors.Is(res[k].Err, provider.ErrTicketAssigned):
				d.Metrics.slot(q.Name, "refused")
			default:
				p.e.log.Warn("record an assignment", "match", st[i].m.ID, "err", res[k].Err)
			}
		}
	}
	cctx, cancel := p.e.cleanupContext(ctx)
	defer cancel()
	for i, s := range st {
		if offered[i] {
			p.staged = append(p.staged, s)
			continue
		}
		if held[i] {
			// An offer whose outcome is unknown (the record failed as a
			// whole) may stand: it expires by its window, or, assigned at
			// once, holds a slot in the record until the provider's next
			// online syncs the live pool from it.
			if err := d.Providers.Release(cctx, q.Name, s.m.Provider.UserID, s.m.ID); err != nil {
				p.e.log.Warn("free a provider's slot", "match", s.m.ID, "provider", s.m.Provider.UserID, "err", err)
			}
		}
		p.requeue(ctx, s.m.ID, s.group)
	}
}

// assignmentOf is the record's assignment of a provider queue's match,
// offered at offeredAt.
func assignmentOf(m matcher.Match, offeredAt time.Time) provider.Assignment {
	a := provider.Assignment{
		ID: m.ID, Queue: m.Queue, Provider: m.Provider.UserID, Score: m.Provider.Score, Parts: m.Provider.Parts,
		OfferedAt: offeredAt,
	}
	if len(m.Players) > 0 {
		a.TicketID, a.Requester = m.Players[0].TicketID, m.Players[0].UserID
	}
	if m.AcceptBy != nil {
		a.AcceptBy = *m.AcceptBy
	}
	return a
}

// endAssignment ends the assignment of a provider match that will not be
// played, or whose session is over, and frees its slot: the record first
// (whatever its state: an offer is declined, a running one ended), then
// the live pool. Each step is repairable: an offer the record still holds
// expires by its window (expireOffers), and the live pool's slots are
// synced from the record when the provider comes online.
func (deps Deps) endAssignment(ctx context.Context, log *slog.Logger, m matcher.Match, reason string, now time.Time) {
	if m.Provider == nil || deps.Assignments == nil {
		return
	}
	a, err := deps.Assignments.Get(ctx, m.ID)
	switch {
	case errors.Is(err, provider.ErrNotFound):
	case err != nil:
		log.Warn("read an assignment to end", "match", m.ID, "err", err)
		return
	case a.Status == provider.StatusOffered:
		_, err = deps.Assignments.Decline(ctx, m.ID, now)
	case a.Status == provider.StatusAccepted:
		_, err = deps.Assignments.End(ctx, m.ID, reason, now)
	}
	if err != nil && !errors.Is(err, provider.ErrNotFound) && !errors.Is(err, provider.ErrConflict) {
		log.Warn("end an assignment", "match", m.ID, "err", err)
		return
	}
	if deps.Providers != nil {
		if err := deps.Providers.Release(ctx, m.Queue, m.Provider.UserID, m.ID); err != nil {
			log.Warn("free a provider's slot", "match", m.ID, "provider", m.Provider.UserID, "err", err)
		}
	}
}

// offersBatch is how many passed offers one pass ends.
const offersBatch = 256

// expireOffers ends the offers whose window passed without a match of the
// record to close (a pass that recorded an offer and died before its
// commit), freeing their slots. Windows of committed matches are closed
// by closeAcceptWindows, which ends their offers first.
func (p *pass) expireOffers(ctx context.Context) {
	d := p.e.cfg
	if d.Assignments == nil || p.e.q.AcceptWindow == 0 {
		return
	}
	// A grace of one commit's budget: a match being committed now closes
	// its own window.
	as, err := d.Assignments.Expire(ctx, p.e.q.Name, p.now.Add(-p.e.cfg.CommitTimeout), offersBatch)
	if err != nil {
		p.e.log.Warn("expire passed offers", "err", err)
		return
	}
	for _, a := range as {
		if d.Providers != nil {
			if err := d.Providers.Release(ctx, a.Queue, a.Provider, a.ID); err != nil {
				p.e.log.Warn("free a provider's slot", "match", a.ID, "provider", a.Provider, "err", err)
			}
		}
	}
}
