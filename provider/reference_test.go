package provider

// The assignment as it stood before its per-pass index: the reference
// the equivalence test holds Batch and Greedy to, pick for pick.

import (
	"cmp"
	"slices"
	"time"
)

// Both passes score every pair on the snapshot they are given (a pick
// does not change the load term of the picks after it), so that their
// totals compare and a batch's optimum is one of fixed edge weights.

// refPrepare orders a pass's input so that equal inputs give equal picks
// whatever their order: providers by user id, requesters oldest first
// (Enqueued, then TicketID). A provider named twice keeps its first entry
// and a ticket named twice its oldest, so neither slots nor tickets count
// twice.
func refPrepare(providers []Provider, reqs []Requester) ([]Provider, []Requester) {
	ps := slices.Clone(providers)
	slices.SortStableFunc(ps, func(a, b Provider) int { return cmp.Compare(a.UserID, b.UserID) })
	ps = slices.CompactFunc(ps, func(a, b Provider) bool { return a.UserID == b.UserID })
	rs := slices.Clone(reqs)
	slices.SortStableFunc(rs, func(a, b Requester) int {
		if c := a.Enqueued.Compare(b.Enqueued); c != 0 {
			return c
		}
		return cmp.Compare(a.TicketID, b.TicketID)
	})
	seen := make(map[string]bool, len(rs))
	rs = slices.DeleteFunc(rs, func(r Requester) bool {
		dup := seen[r.TicketID]
		seen[r.TicketID] = true
		return dup
	})
	return ps, rs
}

func refFrees(ps []Provider) []int {
	free := make([]int, len(ps))
	for i, pr := range ps {
		free[i] = pr.Free()
	}
	return free
}

func refNewPick(p Policy, pr Provider, r Requester, now time.Time, tier int) Pick {
	s := Scored{Tier: tier, Parts: make(map[string]float64, len(terms))}
	s.Score = refScore(p, pr, r, now, tier, s.Parts)
	return Pick{Requester: r, Provider: pr.UserID, Scored: s}
}

// refBest is the index of the feasible provider with a slot left in free that
// scores highest for r (ties: more slots left, then the smaller user id),
// -1 when none is.
func refBest(p Policy, ps []Provider, free []int, r Requester, now time.Time, tier int) int {
	at, top := -1, 0.0
	for j, pr := range ps {
		if free[j] <= 0 || refFeasible(p, pr, r, now) != "" {
			continue
		}
		// ps is ordered by user id, so an earlier equal keeps the place.
		if s := refScore(p, pr, r, now, tier, nil); at < 0 || s > top || s == top && free[j] > free[at] {
			at, top = j, s
		}
	}
	return at
}

// refGreedyPublic gives each requester, oldest first, the feasible provider with a
// slot left that scores highest for it (ties: more slots left, then the
// smaller user id). Picks come oldest requester first.
func refGreedyPublic(p Policy, providers []Provider, reqs []Requester, now time.Time, tier int) []Pick {
	ps, rs := refPrepare(providers, reqs)
	return refGreedy(p, ps, rs, now, clampTier(p, tier))
}

// refGreedy is refGreedyPublic on prepared input.
func refGreedy(p Policy, ps []Provider, rs []Requester, now time.Time, tier int) []Pick {
	free := refFrees(ps)
	var picks []Pick
	for _, r := range rs {
		if j := refBest(p, ps, free, r, now, tier); j >= 0 {
			free[j]--
			picks = append(picks, refNewPick(p, ps[j], r, now, tier))
		}
	}
	return picks
}

// refBatch assigns the oldest BatchMax requesters as a maximum-weight
// maximum b-matching: as many requesters as the providers' free slots can
// take, and among those assignments the one of highest total refScore, each
// requester limited to its BatchK best feasible providers. It runs
// successive shortest augmenting paths (SPFA, costs the negated scores) on
// the refFlow network source → requester (1) → provider (free slots) → sink;
// every augmentation adds one requester, so the refFlow of each size is the
// cheapest, and the last is the cheapest of maximum size. The requesters
// the bounds left out or left unassigned then take, oldest first, the refBest
// provider with a slot left, as in refGreedyPublic. Where the bounds cut the graph
// the result is optimal only within them, so refGreedyPublic's picks are taken
// instead when they seat more, or as many for a higher total: a batch is
// never worse than refGreedy. Picks come oldest requester first.
func refBatch(p Policy, providers []Provider, reqs []Requester, now time.Time, tier int) []Pick {
	ps, rs := refPrepare(providers, reqs)
	tier = clampTier(p, tier)
	free := refFrees(ps)
	n := min(len(rs), BatchMax)

	// Nodes: 0 the source, 1 the sink, 2..2+n-1 the requesters, then the
	// providers.
	const source, sink = 0, 1
	g := refNewFlow(2 + n + len(ps))
	for j := range ps {
		if free[j] > 0 {
			g.add(2+n+j, sink, free[j], 0)
		}
	}
	type cand struct {
		j int
		s float64
	}
	var cands []cand
	truncated := false
	match := make([]int, len(rs)) // requester → provider index, -1 none
	edges := make([][2]int, n)    // requester → its candidate edges [from, to)
	for i, r := range rs[:n] {
		cands = cands[:0]
		for j, pr := range ps {
			if free[j] > 0 && refFeasible(p, pr, r, now) == "" {
				cands = append(cands, cand{j, refScore(p, pr, r, now, tier, nil)})
			}
		}
		slices.SortFunc(cands, func(a, b cand) int {
			if c := cmp.Compare(b.s, a.s); c != 0 {
				return c
			}
			if c := cmp.Compare(free[b.j], free[a.j]); c != 0 {
				return c
			}
			return cmp.Compare(a.j, b.j)
		})
		if len(cands) > BatchK {
			cands, truncated = cands[:BatchK], true
		}
		// A node's edges are searched last added first: the refBest candidate
		// goes last so that, of equal paths, the search keeps the one
		// through it.
		edges[i][0] = len(g.to)
		for _, c := range slices.Backward(cands) {
			g.add(2+i, 2+n+c.j, 1, -c.s)
		}
		edges[i][1] = len(g.to)
	}
	// Likewise the oldest requester's edge goes last, so that it is the
	// first the search leaves the source by.
	for i := n - 1; i >= 0; i-- {
		g.add(source, 2+i, 1, 0)
	}
	for i := range match {
		match[i] = -1
	}
	for g.augment(source, sink) {
	}
	for i, span := range edges {
		for e := span[0]; e < span[1]; e += 2 {
			if g.cap[e] == 0 {
				match[i] = g.to[e] - 2 - n
				free[match[i]]--
				break
			}
		}
	}
	for i, r := range rs {
		if match[i] < 0 {
			if j := refBest(p, ps, free, r, now, tier); j >= 0 {
				free[j]--
				match[i] = j
			}
		}
	}
	var picks []Pick
	for i, r := range rs {
		if j := match[i]; j >= 0 {
			picks = append(picks, refNewPick(p, ps[j], r, now, tier))
		}
	}
	// Within the bounds the refFlow is optimal and refGreedy cannot do better;
	// past them (a requester's BatchK best providers contended, or more
	// than BatchMax waiting) it can, and then its picks are the pass's.
	if n < len(rs) || truncated {
		if gp := refGreedy(p, ps, rs, now, tier); len(gp) > len(picks) || len(gp) == len(picks) && refSum(gp) > refSum(picks) {
			return gp
		}
	}
	return picks
}

func refSum(picks []Pick) float64 {
	total := 0.0
	for _, pk := range picks {
		total += pk.Score
	}
	return total
}

// refFlow is a residual network: edge e and its reverse e^1 side by side.
type refFlow struct {
	head []int // node → its last edge, -1 none
	next []int // edge → the node's edge before it
	to   []int
	cap  []int
	cost []float64
	// eps absorbs rounding: a zero-cost cycle of residual edges must not
	// look negative, or the search would never settle.
	eps float64

	dist    []float64
	prev    []int // node → the edge the shortest path enters it by
	reached []bool
	inQ     []bool
	seen    []int // node → times it entered the queue
	queue   []int
}

func refNewFlow(nodes int) *refFlow {
	g := &refFlow{
		head: make([]int, nodes), dist: make([]float64, nodes), prev: make([]int, nodes),
		reached: make([]bool, nodes), inQ: make([]bool, nodes), seen: make([]int, nodes), eps: 1e-9,
	}
	for v := range g.head {
		g.head[v] = -1
	}
	return g
}

func (g *refFlow) add(u, v, c int, cost float64) {
	for _, e := range [2]struct {
		from, to, cap int
		cost          float64
	}{{u, v, c, cost}, {v, u, 0, -cost}} {
		g.next = append(g.next, g.head[e.from])
		g.head[e.from] = len(g.to)
		g.to = append(g.to, e.to)
		g.cap = append(g.cap, e.cap)
		g.cost = append(g.cost, e.cost)
	}
	g.eps = max(g.eps, 1e-9*(1+refAbs(cost)))
}

// augment sends one unit along a cheapest path from s to t with SPFA and
// reports whether there was one. The residual network of a cheapest refFlow
// has no negative cycle, so the search settles; should rounding make one
// anyway, a node entering the queue more often than there are nodes stops
// the pass rather than loop.
func (g *refFlow) augment(s, t int) bool {
	nodes := len(g.head)
	reached := g.reached
	for v := range nodes {
		g.dist[v], g.prev[v], reached[v], g.inQ[v], g.seen[v] = 0, -1, false, false, 0
	}
	reached[s] = true
	g.queue = append(g.queue[:0], s)
	g.inQ[s] = true
	for q := 0; q < len(g.queue); q++ {
		u := g.queue[q]
		g.inQ[u] = false
		for e := g.head[u]; e >= 0; e = g.next[e] {
			if g.cap[e] <= 0 {
				continue
			}
			v, d := g.to[e], g.dist[u]+g.cost[e]
			if reached[v] && d >= g.dist[v]-g.eps {
				continue
			}
			reached[v], g.dist[v], g.prev[v] = true, d, e
			if !g.inQ[v] {
				if g.seen[v]++; g.seen[v] > nodes {
					return false
				}
				g.inQ[v] = true
				g.queue = append(g.queue, v)
			}
		}
	}
	if !reached[t] {
		return false
	}
	for v := t; v != s; v = g.to[g.prev[v]^1] {
		e := g.prev[v]
		g.cap[e]--
		g.cap[e^1]++
	}
	return true
}

func refFeasible(p Policy, pr Provider, r Requester, now time.Time) string {
	if pr.Free() <= 0 {
		if !pr.Online {
			return whyOffline
		}
		return whyAtCapacity
	}
	var dropped [len(constraints)]bool
	wait := r.Wait(now)
	for _, x := range p.Relax {
		if c := constraintIndex(x.Drop); c >= 0 && x.After <= wait {
			dropped[c] = true
		}
	}
	for c, name := range constraints {
		if dropped[c] {
			continue
		}
		var met bool
		switch name {
		case ConstraintLanguage:
			met = r.Prefs.Language == "" || slices.Contains(pr.Attributes.Languages, r.Prefs.Language)
		case ConstraintSessionType:
			met = r.Prefs.SessionType == "" || slices.Contains(pr.Attributes.SessionTypes, r.Prefs.SessionType)
		case ConstraintMinRating:
			met = pr.Attributes.Rating >= r.Prefs.MinRating
		case ConstraintSpecialty:
			met = r.Prefs.Specialty == "" || slices.Contains(pr.Attributes.Specialties, r.Prefs.Specialty)
		}
		if !met {
			return name
		}
	}
	return ""
}

func refScore(p Policy, pr Provider, r Requester, now time.Time, tier int, parts map[string]float64) float64 {
	var shed [len(terms)]bool
	for _, t := range p.Shed[:tier] {
		for _, name := range t.Drop {
			if i := termIndex(name); i >= 0 {
				shed[i] = true
			}
		}
	}
	total := 0.0
	for i, name := range terms {
		w := p.weight(i)
		if shed[i] || !(w > 0) {
			continue
		}
		var v float64
		switch name {
		case TermSpecialty:
			if want := r.Prefs.Specialty; want != "" {
				if i := slices.Index(pr.Attributes.Specialties, want); i == 0 {
					v = 1
				} else if i > 0 {
					v = 0.5
				}
			}
		case TermRating:
			v = unit(pr.Attributes.Rating / 5)
		case TermLoad:
			if pr.Capacity > 0 {
				v = unit(1 - float64(pr.Used)/float64(pr.Capacity))
			}
		case TermWait:
			if p.Deadline > 0 {
				v = unit(float64(r.Wait(now)) / float64(p.Deadline))
			}
		}
		c := w * v
		total += c
		if parts != nil {
			parts[name] = c
		}
	}
	return total
}

func refAbs(v float64) float64 { return max(v, -v) }
