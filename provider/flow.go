package provider

import "math"

// flow is the batch's network source → requester (1) → provider (free
// slots) → sink, kept as the assignment it carries rather than as edge
// lists: a residual edge with no capacity left is never followed, so a
// node's search visits only those with some, in the order the network of
// linked edge lists visited them (an edge list searched last added
// first):
//
//   - source: the unmatched requesters, oldest first;
//   - requester i: the source if i is matched, then its candidates best
//     first but the one it holds;
//   - provider j: back to the requesters it holds, youngest first, then
//     the sink while a slot is left;
//   - sink: back to the providers holding some, by user id descending.
//
// The same relaxations in the same order make the same search, so that
// the paths taken, and the picks, stay those of the edge-list network.
type flow struct {
	n     int // requesters: node 2+i; provider j is node 2+n+j
	free  []int
	cands [][]cand // requester → its candidates, best first
	match []int    // requester → provider index, -1 none
	holds [][]hold // provider → the requesters it holds, youngest first
	used  []int    // provider → slots held
	full  []int    // the providers holding some, by index descending
	eps   float64  // absorbs rounding, as in the edge-list network
	// The search's state by node.
	dist  []float64
	prev  []int32 // the node the cheapest path enters by, -1 none
	seen  []int32 // times in the queue
	state []uint8 // reached, inQ
	queue []int32
}

// hold is a requester held by a provider and the cost of its edge there.
type hold struct {
	i    int
	cost float64
}

const (
	reached = 1 << iota
	inQ
)

const source, sink = 0, 1

func newFlow(n int, free []int) *flow {
	g := &flow{n: n, free: free, cands: make([][]cand, n), match: make([]int, n), holds: make([][]hold, len(free)),
		used: make([]int, len(free)), eps: 1e-9}
	nodes := 2 + n + len(free)
	g.dist, g.prev, g.seen, g.state = make([]float64, nodes), make([]int32, nodes), make([]int32, nodes), make([]uint8, nodes)
	for i := range g.match {
		g.match[i] = -1
	}
	return g
}

// candidates gives requester i its edges, cs best first (copied).
func (g *flow) candidates(i int, cs []cand) {
	g.cands[i] = append([]cand(nil), cs...)
	// The edge list's eps folded every edge's cost, the worst first.
	for k := len(cs) - 1; k >= 0; k-- {
		g.eps = max(g.eps, 1e-9*(1+math.Abs(-cs[k].s)))
	}
}

// augment sends one unit along a cheapest path from source to sink with
// SPFA and reports whether there was one. The residual network of a
// cheapest flow has no negative cycle, so the search settles; should
// rounding make one anyway, a node entering the queue more often than
// there are nodes stops the pass rather than loop.
func (g *flow) augment() bool {
	dist, prev, seen, state := g.dist, g.prev, g.seen, g.state
	for v := range dist {
		dist[v], prev[v], seen[v], state[v] = 0, -1, 0, 0
	}
	limit := int32(len(dist))
	eps := g.eps
	// relax is the edge-list search's step for an edge u→v of residual
	// capacity; false when v entered the queue too often.
	relax := func(u, v int32, cost float64) bool {
		d := dist[u] + cost
		st := state[v]
		if st&reached != 0 && d >= dist[v]-eps {
			return true
		}
		dist[v], prev[v] = d, u
		if st&inQ == 0 {
			if seen[v]++; seen[v] > limit {
				return false
			}
			state[v] = reached | inQ
			g.queue = append(g.queue, v)
		} else {
			state[v] = st | reached
		}
		return true
	}
	negZero := math.Copysign(0, -1) // a reverse edge's cost, -0
	state[source] = reached | inQ
	g.queue = append(g.queue[:0], source)
	base := int32(2 + g.n)
	for q := 0; q < len(g.queue); q++ {
		u := g.queue[q]
		state[u] &^= inQ
		switch {
		case u == source:
			for i, j := range g.match {
				if j < 0 && !relax(u, int32(2+i), 0) {
					return false
				}
			}
		case u == sink:
			for _, j := range g.full {
				if !relax(u, base+int32(j), negZero) {
					return false
				}
			}
		case u < base:
			i := u - 2
			held := g.match[i]
			if held >= 0 && !relax(u, source, negZero) {
				return false
			}
			for _, c := range g.cands[i] {
				if c.j != held && !relax(u, base+int32(c.j), -c.s) {
					return false
				}
			}
		default:
			j := u - base
			for _, h := range g.holds[j] {
				if !relax(u, int32(2+h.i), -h.cost) {
					return false
				}
			}
			if g.used[j] < g.free[j] && !relax(u, sink, 0) {
				return false
			}
		}
	}
	if state[sink]&reached == 0 {
		return false
	}
	for v, base := sink, int(base); v != source; {
		u := int(prev[v])
		switch {
		case v == sink: // provider u takes a slot
			j := u - base
			if g.used[j]++; g.used[j] == 1 {
				at := len(g.full)
				g.full = append(g.full, j)
				for ; at > 0 && g.full[at-1] < j; at-- {
					g.full[at] = g.full[at-1]
				}
				g.full[at] = j
			}
		case u == source: // requester v is matched
		case u < base: // requester u moves to provider v
			i, j := u-2, v-base
			g.match[i] = j
			var cost float64
			for _, c := range g.cands[i] {
				if c.j == j {
					cost = -c.s
				}
			}
			hs := append(g.holds[j], hold{})
			at := len(hs) - 1
			for ; at > 0 && hs[at-1].i < i; at-- {
				hs[at] = hs[at-1]
			}
			hs[at] = hold{i, cost}
			g.holds[j] = hs
		default: // provider u lets requester v go
			i, j := v-2, u-base
			for k, h := range g.holds[j] {
				if h.i == i {
					g.holds[j] = append(g.holds[j][:k], g.holds[j][k+1:]...)
					break
				}
			}
		}
		v = u
	}
	return true
}
