package matcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/matcher/pool"
)

// Notifier publishes outbox events right after the commit that wrote them, so
// a push never waits for the relay's sweep. It must not block for long; the
// relay delivers whatever it fails to.
type Notifier interface {
	Deliver(ctx context.Context, events []Event)
}

// EngineConfig configures the loop of one partition.
type EngineConfig struct {
	Queue  QueueConfig // normalized
	Region string
	Pool   *pool.Pool
	Ledger Ledger
	// Notifier publishes committed events at once; nil leaves them to the relay.
	Notifier Notifier
	// Fence returns the partition's lease fencing token, checked by the claim
	// script and the commit. Nil runs unfenced (token 0): tests and tools.
	// With a Fence, a pass while it returns 0 (the lease is not held, or its
	// validity ran out) does nothing.
	Fence func() int64
	// Presence tells when users were last seen with a live socket; with it a
	// ticket whose player has a socket is never evicted as a ghost. Nil: only
	// heartbeats count.
	Presence Presence
	// Now is the clock; nil means time.Now.
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics
}

// Engine forms the matches of one partition. Tick is one pass; Run calls it
// every tick and whenever Wake is called. Ticks never overlap.
type Engine struct {
	cfg  EngineConfig
	q    *QueueConfig
	part string
	wake chan struct{}
	log  *slog.Logger
}

// NewEngine validates the configuration; it starts nothing.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	if cfg.Pool == nil || cfg.Ledger == nil {
		return nil, errors.New("engine: Pool and Ledger are required")
	}
	if err := cfg.Queue.Validate(); err != nil {
		return nil, fmt.Errorf("engine: queue %s: %w", cfg.Queue.Name, err)
	}
	if !cfg.Queue.HasRegion(cfg.Region) {
		return nil, fmt.Errorf("engine: queue %s has no region %q", cfg.Queue.Name, cfg.Region)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := Partition{Queue: cfg.Queue.Name, Region: cfg.Region}
	e := &Engine{cfg: cfg, part: p.String(), wake: make(chan struct{}, 1)}
	e.q = &e.cfg.Queue
	e.log = cfg.Logger.With("partition", e.part)
	return e, nil
}

// Partition returns the partition the engine owns.
func (e *Engine) Partition() Partition { return Partition{Queue: e.q.Name, Region: e.cfg.Region} }

// Wake asks for a pass as soon as the current one ends. It never blocks;
// wakes that arrive during a pass collapse into one.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Presence is the part of the presence tracker the engine reads.
type Presence interface {
	// LastSeen returns, per user, when they last had a live socket (now if
	// they have one); users with no record are absent.
	LastSeen(ctx context.Context, users []string) (map[string]time.Time, error)
}

// passTimeout bounds one pass; a pass is never cut short by Run's context, so
// that a claim in flight when the engine stops is committed or put back.
const passTimeout = 15 * time.Second

// Run passes every tick and on every wake until ctx ends. A pass under way
// when ctx ends is finished first.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.q.Tick)
	defer t.Stop()
	var lastErr time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-e.wake:
		}
		passCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), passTimeout)
		res, err := e.Tick(passCtx)
		cancel()
		if err != nil && ctx.Err() == nil {
			// A dependency outage would log every tick; once a second is enough.
			if now := time.Now(); now.Sub(lastErr) > time.Second {
				lastErr = now
				e.log.Warn("matching pass failed", "err", err)
			}
			continue
		}
		if res.Matches > 0 {
			// More may be formable (a burst of joins): go again at once.
			e.Wake()
		}
	}
}

// TickResult counts what one pass did.
type TickResult struct {
	Matches int
	Expired int
	Ghosts  int
	Players int
}

// Tick runs one matching pass: ghosts evicted, then deadlines, then anchors
// in wait order.
func (e *Engine) Tick(ctx context.Context) (TickResult, error) {
	fence := int64(0)
	if e.cfg.Fence != nil {
		if fence = e.cfg.Fence(); fence == 0 {
			return TickResult{}, nil // not the owner (any more)
		}
	}
	start := time.Now()
	defer func() { e.cfg.Metrics.observeTick(e.q.Name, e.cfg.Region, time.Since(start)) }()
	p := &pass{e: e, now: e.cfg.Now(), fence: fence, used: map[string]bool{}}
	if err := p.ghosts(ctx); err != nil {
		return p.res, err
	}
	if err := p.deadlines(ctx); err != nil {
		return p.res, err
	}
	var err error
	switch e.q.Kind {
	case KindRoom:
		err = p.rooms(ctx)
	default:
		err = p.skill(ctx)
	}
	return p.res, err
}

// pass is the state of one Tick: the clock reading and the tickets already
// used (formed, expired or found gone) so no later step reconsiders them.
type pass struct {
	e     *Engine
	now   time.Time
	fence int64
	used  map[string]bool
	res   TickResult
}

// window is the anchor's half-width after its wait.
func (p *pass) window(a pool.Entry) float64 {
	w := p.e.q.Window.Width(p.now.Sub(a.Enqueue))
	if a.Estimated && w < p.e.q.EstimatedMinWidth {
		w = p.e.q.EstimatedMinWidth
	}
	return w
}

// distance is the weighted sum of per-dimension differences, compared against
// the same widening window whatever the number of dimensions.
func (p *pass) distance(a, b pool.Entry) float64 {
	return p.e.q.weight("skill")*math.Abs(a.Skill-b.Skill) +
		p.e.q.weight("activity")*math.Abs(a.Activity-b.Activity)
}

func byWaitOrder(es []pool.Entry) {
	sort.SliceStable(es, func(i, j int) bool {
		if !es[i].Enqueue.Equal(es[j].Enqueue) {
			return es[i].Enqueue.Before(es[j].Enqueue)
		}
		return es[i].TicketID < es[j].TicketID
	})
}

// usable reports whether c may join group: not used this pass and not a user
// already seated.
func (p *pass) usable(group []pool.Entry, c pool.Entry) bool {
	if p.used[c.TicketID] || c.UserID == "" {
		return false
	}
	for _, g := range group {
		if g.TicketID == c.TicketID || g.UserID == c.UserID {
			return false
		}
	}
	return true
}

// skill tries the oldest waiters as anchors, up to AnchorDepth of them, so an
// outlier at the head never blocks the players behind it.
func (p *pass) skill(ctx context.Context) error {
	q := p.e.q
	anchors, err := p.e.cfg.Pool.Oldest(ctx, p.e.part, q.AnchorDepth)
	if err != nil {
		return fmt.Errorf("read anchors: %w", err)
	}
	for _, a := range anchors {
		if !p.usable(nil, a) {
			continue
		}
		w := p.window(a)
		// The skill term alone bounds the scan: distance ≥ weight·|Δskill|.
		reach := w
		if ws := q.weight("skill"); ws > 0 {
			reach = w / ws
		} else {
			reach = math.Inf(1)
		}
		cands, err := p.e.cfg.Pool.Window(ctx, p.e.part, a.Skill-reach, a.Skill+reach, q.ScanLimit)
		if err != nil {
			return fmt.Errorf("read window of %s: %w", a.TicketID, err)
		}
		byWaitOrder(cands)
		group := []pool.Entry{a}
		for _, c := range cands {
			if len(group) == q.Players {
				break
			}
			if !p.usable(group, c) || p.distance(a, c) > w {
				continue
			}
			coherent := true
			for _, g := range group[1:] {
				if p.distance(g, c) > q.Coherence*w {
					coherent = false
					break
				}
			}
			if coherent {
				group = append(group, c)
			}
		}
		if len(group) == q.Players {
			if err := p.form(ctx, group, FormedFilled, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// rooms fills rooms of K from the oldest waiters; with fewer than K left, a
// FALLBACK room of at least MinPlayers forms once the oldest has waited
// FallbackAfter.
func (p *pass) rooms(ctx context.Context) error {
	q := p.e.q
	olds, err := p.e.cfg.Pool.Oldest(ctx, p.e.part, q.Players*q.AnchorDepth)
	if err != nil {
		return fmt.Errorf("read oldest: %w", err)
	}
	var group []pool.Entry
	for _, c := range olds {
		if !p.usable(group, c) {
			continue
		}
		group = append(group, c)
		if len(group) == q.Players {
			if err := p.form(ctx, group, FormedFilled, 0); err != nil {
				return err
			}
			group = nil
		}
	}
	if q.FallbackAfter > 0 && len(group) >= q.MinPlayers && len(group) >= 2 &&
		p.now.Sub(group[0].Enqueue) >= q.FallbackAfter {
		return p.form(ctx, group, FormedFallback, 0)
	}
	return nil
}

// deadlines resolves every ticket whose deadline has passed: a TIMEOUT match
// with the closest players regardless of window (bots in the empty seats where
// allowed, short-handed when at least MinPlayers), else EXPIRED.
func (p *pass) deadlines(ctx context.Context) error {
	q := p.e.q
	due, err := p.e.cfg.Pool.Due(ctx, p.e.part, p.now, 64)
	if err != nil {
		return fmt.Errorf("read due: %w", err)
	}
	for _, d := range due {
		if p.used[d.TicketID] {
			continue
		}
		if d.UserID == "" {
			continue // no ticket hash: the reconciler repairs it from the record
		}
		var others []pool.Entry
		if q.Kind == KindRoom {
			others, err = p.e.cfg.Pool.Oldest(ctx, p.e.part, q.Players*2)
		} else {
			others, err = p.e.cfg.Pool.Nearest(ctx, p.e.part, d.Skill, q.Players)
		}
		if err != nil {
			return fmt.Errorf("read players near %s: %w", d.TicketID, err)
		}
		group := []pool.Entry{d}
		for _, c := range others {
			if len(group) == q.Players {
				break
			}
			if p.usable(group, c) {
				group = append(group, c)
			}
		}
		switch {
		case q.Bots:
			err = p.form(ctx, group, FormedTimeout, q.Players-len(group))
		case len(group) >= q.MinPlayers && len(group) >= 2:
			err = p.form(ctx, group, FormedTimeout, 0)
		default:
			err = p.expire(ctx, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ghosts cancels (reason heartbeat) the tickets whose players have had no
// live socket and sent no heartbeat for the queue's heartbeat timeout, so
// that no ghost is ever matched. A player seen since then has the ticket's
// heartbeat moved up instead, keeping the ticket and its place.
func (p *pass) ghosts(ctx context.Context) error {
	timeout := p.e.q.HeartbeatTimeout
	stale, err := p.e.cfg.Pool.Stale(ctx, p.e.part, p.now.Add(-timeout), 256)
	if err != nil || len(stale) == 0 {
		return err
	}
	seen := map[string]time.Time{}
	if p.e.cfg.Presence != nil {
		users := make([]string, 0, len(stale))
		for _, s := range stale {
			users = append(users, s.UserID)
		}
		// Without presence nobody can be judged a ghost: skip, never guess.
		if seen, err = p.e.cfg.Presence.LastSeen(ctx, users); err != nil {
			return fmt.Errorf("presence: %w", err)
		}
	}
	for _, s := range stale {
		if p.used[s.TicketID] || s.UserID == "" {
			continue
		}
		last := s.Heartbeat
		if at, ok := seen[s.UserID]; ok && at.After(last) {
			last = at
		}
		if p.now.Sub(last) < timeout {
			if _, err := p.e.cfg.Pool.Heartbeat(ctx, p.e.part, s.TicketID, last); err != nil {
				return err
			}
			continue
		}
		if err := p.resolve(ctx, s, StatusCancelled, ReasonHeartbeat); err != nil {
			return err
		}
	}
	return nil
}

// expire ends a ticket nobody could be matched with by its deadline.
func (p *pass) expire(ctx context.Context, d pool.Entry) error {
	return p.resolve(ctx, d, StatusExpired, "")
}

// resolve ends a waiting ticket without a match (expired, or cancelled as a
// ghost): the record first, then the pool.
func (p *pass) resolve(ctx context.Context, d pool.Entry, status TicketStatus, reason string) error {
	p.used[d.TicketID] = true
	_, events, err := p.e.cfg.Ledger.Resolve(ctx, d.TicketID, status, reason, p.now)
	var nw *NotWaitingError
	switch {
	case errors.As(err, &nw), errors.Is(err, ErrNotFound):
		// Already resolved (a cancel won): the pool entry is stale either way.
	case err != nil:
		return fmt.Errorf("resolve %s as %s: %w", d.TicketID, status, err)
	default:
		if status == StatusExpired {
			p.res.Expired++
		} else {
			p.res.Ghosts++
		}
		p.e.cfg.Metrics.outcome(p.e.q.Name, string(status))
	}
	if _, err := p.e.cfg.Pool.Remove(ctx, p.e.part, d.TicketID); err != nil {
		return fmt.Errorf("remove %s: %w", d.TicketID, err)
	}
	p.deliver(ctx, events)
	return nil
}

// form claims the group in Redis (all or nothing, fenced), commits the match
// to the ledger (one transaction, row count checked) and publishes it. A
// shortfall puts the still-waiting players back with their original scores.
func (p *pass) form(ctx context.Context, group []pool.Entry, formedBy string, bots int) error {
	q := p.e.q
	m := Match{
		ID: uuid.NewString(), Queue: q.Name, Region: p.e.cfg.Region, State: MatchReady,
		FormedBy: formedBy, Bots: bots, CreatedAt: p.now.UTC().Truncate(time.Microsecond), Version: 1,
	}
	if q.AcceptWindow > 0 {
		m.State = MatchPendingAccept
		by := m.CreatedAt.Add(q.AcceptWindow)
		m.AcceptBy = &by
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	ids := make([]string, len(group))
	for i, g := range group {
		ids[i] = g.TicketID
		m.Players = append(m.Players, Player{TicketID: g.TicketID, UserID: g.UserID, Skill: g.Skill})
		lo, hi = math.Min(lo, g.Skill), math.Max(hi, g.Skill)
	}
	m.Spread = hi - lo

	claim, err := p.e.cfg.Pool.Claim(ctx, p.e.part, p.fence, m.ID, ids)
	if err != nil {
		return fmt.Errorf("claim %s: %w", m.ID, err)
	}
	if !claim.OK {
		// Someone else (a cancel, another matcher) took these first.
		for _, id := range claim.Missing {
			p.used[id] = true
		}
		p.e.cfg.Metrics.claimConflict(q.Name)
		return nil
	}
	for _, id := range ids {
		p.used[id] = true
	}
	events, err := p.e.cfg.Ledger.CommitMatch(ctx, m, p.fence)
	if err != nil {
		var sf *ShortfallError
		back := group
		if errors.As(err, &sf) {
			still := make(map[string]bool, len(sf.Waiting))
			for _, id := range sf.Waiting {
				still[id] = true
			}
			back = back[:0:0]
			for _, g := range group {
				if still[g.TicketID] {
					back = append(back, g)
				}
			}
			p.e.cfg.Metrics.claimConflict(q.Name)
		}
		if _, rerr := p.e.cfg.Pool.Requeue(ctx, p.e.part, back, p.hashTTL(back)); rerr != nil {
			// The reconciler re-adds them from the record.
			p.e.log.Error("requeue after failed commit", "match", m.ID, "err", rerr)
		}
		if sf != nil {
			return nil
		}
		return fmt.Errorf("commit match %s: %w", m.ID, err)
	}
	p.res.Matches++
	p.res.Players += len(group)
	p.e.cfg.Metrics.matched(m, group, p.now)
	p.deliver(ctx, events)
	return nil
}

func (p *pass) deliver(ctx context.Context, events []Event) {
	if p.e.cfg.Notifier != nil && len(events) > 0 {
		p.e.cfg.Notifier.Deliver(ctx, events)
	}
}

// hashTTL outlives the latest deadline of the entries by the slack the
// deadline path needs.
func (p *pass) hashTTL(es []pool.Entry) time.Duration {
	var last time.Time
	for _, e := range es {
		if e.Deadline.After(last) {
			last = e.Deadline
		}
	}
	return entryTTL(p.now, last)
}

func entryTTL(now, deadline time.Time) time.Duration {
	ttl := deadline.Sub(now) + 10*time.Minute
	if ttl < time.Minute {
		ttl = time.Minute
	}
	return ttl
}
