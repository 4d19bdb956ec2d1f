package provider

import (
	"cmp"
	"slices"
	"time"
)

// The bounds of one batch pass: the oldest BatchMax requesters, each with
// edges to its BatchK best feasible providers, keep the flow's graph small
// enough for a pass to stay short; whoever the bound leaves out is filled
// in greedily after.
const (
	BatchK   = 16
	BatchMax = 512
)

// Pick gives Requester a slot of the provider whose user id is Provider,
// with the pair's score.
type Pick struct {
	Requester Requester
	Provider  string
	Scored
}

// Both passes score every pair on the snapshot they are given (a pick
// does not change the load term of the picks after it), so that their
// totals compare and a batch's optimum is one of fixed edge weights.

// prepare orders a pass's input so that equal inputs give equal picks
// whatever their order: providers by user id, requesters oldest first
// (Enqueued, then TicketID). A provider named twice keeps its first entry
// and a ticket named twice its oldest, so neither slots nor tickets count
// twice.
func prepare(providers []Provider, reqs []Requester) ([]Provider, []Requester) {
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

func frees(ps []Provider) []int {
	free := make([]int, len(ps))
	for i, pr := range ps {
		free[i] = pr.Free()
	}
	return free
}

func newPick(p Policy, pr Provider, r Requester, now time.Time, tier int) Pick {
	s := Scored{Tier: tier, Parts: make(map[string]float64, len(terms))}
	s.Score = score(p, pr, r, now, tier, s.Parts)
	return Pick{Requester: r, Provider: pr.UserID, Scored: s}
}

// best is the index of the feasible provider with a slot left in free that
// scores highest for r (ties: more slots left, then the smaller user id),
// -1 when none is.
func best(p Policy, ps []Provider, free []int, r Requester, now time.Time, tier int) int {
	at, top := -1, 0.0
	for j, pr := range ps {
		if free[j] <= 0 || feasible(p, pr, r, now) != "" {
			continue
		}
		// ps is ordered by user id, so an earlier equal keeps the place.
		if s := score(p, pr, r, now, tier, nil); at < 0 || s > top || s == top && free[j] > free[at] {
			at, top = j, s
		}
	}
	return at
}

// Greedy gives each requester, oldest first, the feasible provider with a
// slot left that scores highest for it (ties: more slots left, then the
// smaller user id). Picks come oldest requester first.
func Greedy(p Policy, providers []Provider, reqs []Requester, now time.Time, tier int) []Pick {
	ps, rs := prepare(providers, reqs)
	return greedy(p, ps, rs, now, clampTier(p, tier))
}

// greedy is Greedy on prepared input.
func greedy(p Policy, ps []Provider, rs []Requester, now time.Time, tier int) []Pick {
	free := frees(ps)
	var picks []Pick
	for _, r := range rs {
		if j := best(p, ps, free, r, now, tier); j >= 0 {
			free[j]--
			picks = append(picks, newPick(p, ps[j], r, now, tier))
		}
	}
	return picks
}

// Batch assigns the oldest BatchMax requesters as a maximum-weight
// maximum b-matching: as many requesters as the providers' free slots can
// take, and among those assignments the one of highest total score, each
// requester limited to its BatchK best feasible providers. It runs
// successive shortest augmenting paths (SPFA, costs the negated scores) on
// the flow network source → requester (1) → provider (free slots) → sink;
// every augmentation adds one requester, so the flow of each size is the
// cheapest, and the last is the cheapest of maximum size. The requesters
// the bounds left out or left unassigned then take, oldest first, the best
// provider with a slot left, as in Greedy. Where the bounds cut the graph
// the result is optimal only within them, so Greedy's picks are taken
// instead when they seat more, or as many for a higher total: a batch is
// never worse than greedy. Picks come oldest requester first.
func Batch(p Policy, providers []Provider, reqs []Requester, now time.Time, tier int) []Pick {
	ps, rs := prepare(providers, reqs)
	tier = clampTier(p, tier)
	free := frees(ps)
	n := min(len(rs), BatchMax)

	// Nodes: 0 the source, 1 the sink, 2..2+n-1 the requesters, then the
	// providers.
	const source, sink = 0, 1
	g := newFlow(2 + n + len(ps))
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
			if free[j] > 0 && feasible(p, pr, r, now) == "" {
				cands = append(cands, cand{j, score(p, pr, r, now, tier, nil)})
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
		// A node's edges are searched last added first: the best candidate
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
			if j := best(p, ps, free, r, now, tier); j >= 0 {
				free[j]--
				match[i] = j
			}
		}
	}
	var picks []Pick
	for i, r := range rs {
		if j := match[i]; j >= 0 {
			picks = append(picks, newPick(p, ps[j], r, now, tier))
		}
	}
	// Within the bounds the flow is optimal and greedy cannot do better;
	// past them (a requester's BatchK best providers contended, or more
	// than BatchMax waiting) it can, and then its picks are the pass's.
	if n < len(rs) || truncated {
		if gp := greedy(p, ps, rs, now, tier); len(gp) > len(picks) || len(gp) == len(picks) && sum(gp) > sum(picks) {
			return gp
		}
	}
	return picks
}

func sum(picks []Pick) float64 {
	total := 0.0
	for _, pk := range picks {
		total += pk.Score
	}
	return total
}

// flow is a residual network: edge e and its reverse e^1 side by side.
type flow struct {
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

func abs(v float64) float64 { return max(v, -v) }

func newFlow(nodes int) *flow {
	g := &flow{
		head: make([]int, nodes), dist: make([]float64, nodes), prev: make([]int, nodes),
		reached: make([]bool, nodes), inQ: make([]bool, nodes), seen: make([]int, nodes), eps: 1e-9,
	}
	for v := range g.head {
		g.head[v] = -1
	}
	return g
}

func (g *flow) add(u, v, c int, cost float64) {
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
	g.eps = max(g.eps, 1e-9*(1+abs(cost)))
}

// augment sends one unit along a cheapest path from s to t with SPFA and
// reports whether there was one. The residual network of a cheapest flow
// has no negative cycle, so the search settles; should rounding make one
// anyway, a node entering the queue more often than there are nodes stops
// the pass rather than loop.
func (g *flow) augment(s, t int) bool {
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
