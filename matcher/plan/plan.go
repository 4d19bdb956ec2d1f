package plan

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/provider"
)

// The planner seam (ARCHITECTURE.md §6): choosing groups is a pure
// function of what a pass read and the time. The engine does every read,
// restore and claim around it; a planner never does I/O, so the same code
// runs against the Redis pool, the memory pool and a virtual clock, and
// explain judges a ticket by the window the engine matches it with.

// ReadKind says which read of the pool a planner asks for.
type ReadKind uint8

const (
	// ReadOldest reads the N oldest waiters, in wait order.
	ReadOldest ReadKind = iota + 1
	// ReadAnchors reads the N oldest and, in the same round trip, the Near
	// entries closest in skill to each.
	ReadAnchors
	// ReadNearest reads the N entries closest in skill to Skill.
	ReadNearest
	// ReadBetween reads up to N entries of skill in [Lo, Hi].
	ReadBetween
	// ReadSize counts the waiters.
	ReadSize
)

// A Read is what a planner needs the engine to read from the partition.
type Read struct {
	Kind   ReadKind
	N      int
	Near   int
	Skill  float64
	Lo, Hi float64
}

// A Round is what one round of a pass chooses from.
type Round struct {
	// Anchors are the oldest waiters read (their own partition's), in wait
	// order; Near[i] are Anchors[i]'s candidates when the read asked for
	// them (nil otherwise, or when the read was the whole pool: Whole).
	Anchors []matcher.Entry
	Near    [][]matcher.Entry
	Whole   bool
	// Offered are other partitions' long waiters offered here (Home set);
	// OfferedNear[i] are Offered[i]'s candidates here, unless Whole.
	Offered     []matcher.Entry
	OfferedNear [][]matcher.Entry
	// Used reports the tickets already formed, resolved or restored this
	// pass: never chosen again.
	Used func(ticketID string) bool
	Now  time.Time
	// Providers and Prefs are a provider queue's: the providers as the
	// live pool holds them, and the requesters' preferences by ticket id.
	Providers []provider.Provider
	Prefs     map[string]provider.Preferences
	// Waiting is the length of the line, for the shed tier; Refused the
	// providers that refused each requester, by ticket id.
	Waiting int
	Refused map[string][]string
}

// A Group is a match a planner chose.
type Group struct {
	Entries  []matcher.Entry
	FormedBy string
	Bots     int
	// Provider is the provider a provider queue's group gives its one
	// requester to; nil for every other kind.
	Provider *matcher.ProviderSeat
}

// Crosses reports whether the group seats players of other partitions.
func (g Group) Crosses() bool {
	return slices.ContainsFunc(g.Entries, func(e matcher.Entry) bool { return e.Home != "" })
}

// A Plan is what a round chose: the groups in the order to claim them,
// how many anchors found a full group and how many were tried (the
// engine reads on through a dense head: see Engine's skill rounds).
type Plan struct {
	Groups      []Group
	Full, Tried int
	// Tier is the shed tier a provider queue's plan scored at.
	Tier int
}

// A Planner chooses the groups of one kind of queue.
type Planner interface {
	// Head is the read of the oldest a pass starts from; depth is the
	// anchors the engine wants this pass (at least q.AnchorDepth).
	Head(q *matcher.QueueConfig, depth int) Read
	// Choose picks groups from a round's read.
	Choose(q *matcher.QueueConfig, r Round) Plan
	// TimeoutRead is what to read for d, past its deadline.
	TimeoutRead(q *matcher.QueueConfig, d matcher.Entry) Read
	// Timeout picks d's match from what TimeoutRead read; ok false means d
	// expires unmatched.
	Timeout(q *matcher.QueueConfig, d matcher.Entry, others []matcher.Entry, used func(string) bool) (g Group, ok bool)
	// Explain is the read explain counts a waiting ticket's candidates
	// from, and its window (nil when the kind has none).
	Explain(q *matcher.QueueConfig, e matcher.Entry, now time.Time) (Read, *float64)
	// InWindow reports whether c is a candidate of e's by explain's count.
	InWindow(q *matcher.QueueConfig, e, c matcher.Entry, now time.Time) bool
	// Offers reports whether long waiters are offered to adjacent regions.
	Offers() bool
}

// planners are the kinds of queue and how each chooses its groups;
// adding a kind adds a planner here and in config's list of kinds.
var planners = map[string]Planner{
	matcher.KindSkill:    skillPlanner{},
	matcher.KindRoom:     roomPlanner{},
	matcher.KindProvider: providerPlanner{},
}

// PlannerOf returns the planner of q's kind (skill when unknown: Validate
// refuses any other kind).
func PlannerOf(q *matcher.QueueConfig) Planner {
	if p, ok := planners[q.Kind]; ok {
		return p
	}
	return planners[matcher.KindSkill]
}

// usable reports whether c may join group: not used this pass, read with
// its fields, and not a user already seated.
func usable(used func(string) bool, group []matcher.Entry, c matcher.Entry) bool {
	if used(c.TicketID) || c.UserID == "" {
		return false
	}
	for _, g := range group {
		if g.TicketID == c.TicketID || g.UserID == c.UserID {
			return false
		}
	}
	return true
}

// timeoutGroup seats d with the first usable others: bots in the empty
// seats where allowed, short-handed when at least MinPlayers.
func timeoutGroup(q *matcher.QueueConfig, d matcher.Entry, others []matcher.Entry, used func(string) bool) (Group, bool) {
	group := []matcher.Entry{d}
	for _, c := range others {
		if len(group) == q.Players {
			break
		}
		if usable(used, group, c) {
			group = append(group, c)
		}
	}
	switch {
	case q.Bots:
		return Group{Entries: group, FormedBy: matcher.FormedTimeout, Bots: q.Players - len(group)}, true
	case len(group) >= q.MinPlayers && len(group) >= 2:
		return Group{Entries: group, FormedBy: matcher.FormedTimeout}, true
	}
	return Group{}, false
}

// skillPlanner groups players within a window of skill that widens with
// the wait (ARCHITECTURE.md §6).
type skillPlanner struct{}

func (skillPlanner) Head(q *matcher.QueueConfig, depth int) Read {
	return Read{Kind: ReadAnchors, N: depth, Near: q.ScanLimit}
}

func (skillPlanner) TimeoutRead(q *matcher.QueueConfig, d matcher.Entry) Read {
	return Read{Kind: ReadNearest, N: q.Players, Skill: d.Skill}
}

func (skillPlanner) Timeout(q *matcher.QueueConfig, d matcher.Entry, others []matcher.Entry, used func(string) bool) (Group, bool) {
	return timeoutGroup(q, d, others, used)
}

func (skillPlanner) Offers() bool { return true }

// Width is e's half-width after its wait at now: the queue's window
// curve, at least EstimatedMinWidth for an estimated skill.
func Width(q *matcher.QueueConfig, e matcher.Entry, now time.Time) float64 {
	w := q.Window.Width(now.Sub(e.Enqueue))
	if e.Estimated && w < q.EstimatedMinWidth {
		w = q.EstimatedMinWidth
	}
	return w
}

// reach bounds the skills within distance w: distance ≥ weight·|Δskill|.
func reach(q *matcher.QueueConfig, w float64) float64 {
	if ws := q.Weight("skill"); ws > 0 {
		return w / ws
	}
	return math.Inf(1)
}

// Distance is the weighted sum of per-dimension differences: skill weight
// (default 1) · |Δskill| + activity weight (default 0) · |Δactivity|,
// compared against the same widening window whatever the dimensions.
func Distance(q *matcher.QueueConfig, a, b matcher.Entry) float64 {
	return q.Weight("skill")*math.Abs(a.Skill-b.Skill) + q.Weight("activity")*math.Abs(a.Activity-b.Activity)
}

func (skillPlanner) Explain(q *matcher.QueueConfig, e matcher.Entry, now time.Time) (Read, *float64) {
	w := Width(q, e, now)
	r := reach(q, w)
	// An estimate for people, not a matching read: up to 40 however few a
	// pass reads.
	return Read{Kind: ReadBetween, Lo: e.Skill - r, Hi: e.Skill + r, N: max(q.ScanLimit, 40)}, &w
}

func (skillPlanner) InWindow(q *matcher.QueueConfig, e, c matcher.Entry, now time.Time) bool {
	return Distance(q, e, c) <= Width(q, e, now)
}

// Choose tries each anchor (and the offered players) in wait order: the
// candidates within its window, oldest first, join while every pair stays
// within Coherence times the window. The groups seating offered players
// come first, in their anchors' order (their claims cross partitions and
// keep that order: see Engine's claim); a group of offered players only is
// left to their home partitions.
func (skillPlanner) Choose(q *matcher.QueueConfig, r Round) Plan {
	sc := scratchPool.Get().(*chooseScratch)
	defer sc.release()
	taken := sc.taken
	used := func(id string) bool { return taken[id] || r.Used(id) }
	// Offered players anchor too, in wait order with everyone else: their
	// window is the widest, which is why they were offered.
	anchors := sc.anchors[:0]
	for i, a := range r.Anchors {
		var near []matcher.Entry
		if i < len(r.Near) {
			near = r.Near[i]
		}
		anchors = append(anchors, anchor{a, near})
	}
	for i, o := range r.Offered {
		var near []matcher.Entry
		if i < len(r.OfferedNear) {
			near = r.OfferedNear[i]
		}
		anchors = append(anchors, anchor{o, near})
	}
	sc.anchors = anchors
	if len(r.Offered) > 0 {
		slices.SortStableFunc(anchors, func(a, b anchor) int { return waitOrder(a.e, b.e) })
	}
	var plan Plan
	var own []Group
	for _, an := range anchors {
		a := an.e
		if !usable(used, nil, a) {
			continue
		}
		plan.Tried++
		w := Width(q, a, r.Now)
		reach := reach(q, w)
		// When the anchors are the whole pool the candidates are chosen
		// from them as each anchor's turn comes: the players earlier groups
		// took are not among them (with equal skills, every anchor's
		// closest would otherwise be the same first few).
		near := an.near
		if r.Whole {
			near = matcher.ClosestFunc(r.Anchors, a.Skill, q.ScanLimit, func(c matcher.Entry) bool { return !used(c.TicketID) })
		}
		cands := sc.cands[:0]
		for _, c := range near {
			if c.Skill >= a.Skill-reach && c.Skill <= a.Skill+reach {
				cands = append(cands, c)
			}
		}
		for _, o := range r.Offered {
			if o.Skill >= a.Skill-reach && o.Skill <= a.Skill+reach {
				cands = append(cands, o)
			}
		}
		sc.cands = cands
		slices.SortStableFunc(cands, waitOrder)
		// The group is built in the scratch buffer and copied out only when
		// it fills: most anchors tried do not.
		group := append(sc.group[:0], a)
		for _, c := range cands {
			if len(group) == q.Players {
				break
			}
			if !usable(used, group, c) || Distance(q, a, c) > w {
				continue
			}
			coherent := true
			for _, g := range group[1:] {
				if Distance(q, g, c) > q.Coherence*w {
					coherent = false
					break
				}
			}
			if coherent {
				group = append(group, c)
			}
		}
		sc.group = group
		// A match is hosted here only when it seats someone from here.
		if len(group) < q.Players || !slices.ContainsFunc(group, func(g matcher.Entry) bool { return g.Home == "" }) {
			continue
		}
		plan.Full++
		for _, g := range group {
			taken[g.TicketID] = true
		}
		g := Group{Entries: slices.Clone(group), FormedBy: matcher.FormedFilled}
		if g.Crosses() {
			plan.Groups = append(plan.Groups, g)
		} else {
			own = append(own, g)
		}
	}
	plan.Groups = append(plan.Groups, own...)
	return plan
}

// An anchor is a player Choose tries, with its candidates read.
type anchor struct {
	e    matcher.Entry
	near []matcher.Entry
}

// chooseScratch is what one Choose builds and throws away, kept between
// calls (engines choose concurrently, hence a pool rather than a field).
type chooseScratch struct {
	taken   map[string]bool
	anchors []anchor
	cands   []matcher.Entry
	group   []matcher.Entry
}

var scratchPool = sync.Pool{New: func() any {
	return &chooseScratch{taken: make(map[string]bool)}
}}

// release drops the references the scratch holds and returns it to the
// pool.
func (sc *chooseScratch) release() {
	clear(sc.taken)
	clear(sc.anchors[:cap(sc.anchors)])
	clear(sc.cands[:cap(sc.cands)])
	clear(sc.group[:cap(sc.group)])
	scratchPool.Put(sc)
}

// waitOrder is waitsLonger as a comparison: stable sorts by it keep equal
// entries' order.
func waitOrder(a, b matcher.Entry) int {
	switch {
	case waitsLonger(a, b):
		return -1
	case waitsLonger(b, a):
		return 1
	}
	return 0
}

// waitsLonger is the wait order: the earlier effective enqueue, then the
// ticket id.
func waitsLonger(a, b matcher.Entry) bool {
	if !a.Enqueue.Equal(b.Enqueue) {
		return a.Enqueue.Before(b.Enqueue)
	}
	return a.TicketID < b.TicketID
}

// roomPlanner fills rooms of Players from the oldest waiters, whatever
// their skill (ARCHITECTURE.md §6).
type roomPlanner struct{}

func (roomPlanner) Head(q *matcher.QueueConfig, _ int) Read {
	return Read{Kind: ReadOldest, N: q.Players * q.AnchorDepth}
}

func (roomPlanner) TimeoutRead(q *matcher.QueueConfig, _ matcher.Entry) Read {
	return Read{Kind: ReadOldest, N: q.Players * 2}
}

func (roomPlanner) Timeout(q *matcher.QueueConfig, d matcher.Entry, others []matcher.Entry, used func(string) bool) (Group, bool) {
	return timeoutGroup(q, d, others, used)
}

func (roomPlanner) Offers() bool { return false }

func (roomPlanner) Explain(*matcher.QueueConfig, matcher.Entry, time.Time) (Read, *float64) {
	return Read{Kind: ReadSize}, nil
}

func (roomPlanner) InWindow(*matcher.QueueConfig, matcher.Entry, matcher.Entry, time.Time) bool {
	return true
}

// Choose fills rooms of Players in wait order; with fewer than Players
// left, a FALLBACK room of at least MinPlayers forms once the oldest has
// waited FallbackAfter. Rooms never read on (Full and Tried stay 0).
func (roomPlanner) Choose(q *matcher.QueueConfig, r Round) Plan {
	var plan Plan
	var group []matcher.Entry
	for _, c := range r.Anchors {
		if !usable(r.Used, group, c) {
			continue
		}
		group = append(group, c)
		if len(group) == q.Players {
			plan.Groups = append(plan.Groups, Group{Entries: group, FormedBy: matcher.FormedFilled})
			group = nil
		}
	}
	if q.FallbackAfter > 0 && len(group) >= q.MinPlayers && len(group) >= 2 &&
		r.Now.Sub(group[0].Enqueue) >= q.FallbackAfter {
		plan.Groups = append(plan.Groups, Group{Entries: group, FormedBy: matcher.FormedFallback})
	}
	return plan
}
