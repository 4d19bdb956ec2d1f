package provider

import (
	"cmp"
	"math"
	"slices"
)

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
	edges [][]edge // requester → its candidate edges, best first
	back  []edge   // their backing array
	match []int    // requester → provider index, -1 none
	holds [][]hold // provider → the requesters it holds, youngest first
	used  []int    // provider → slots held
	full  []int    // the providers holding some, by index descending
	eps   float64  // absorbs rounding, as in the edge-list network
	nodes []node   // the search's state
	queue []int32

	// Every search starts alike: the source, then each unmatched
	// requester relaxing its candidates, before any provider is visited.
	// What that opening leaves depends only on who is unmatched, which
	// one augmentation changes by one requester, so it is kept between
	// searches and only a leaving requester's candidates are redone.
	wanted [][]want // provider → the requesters it is a candidate of, oldest first
	first  []int32  // provider → its first unmatched entry in wanted
	open   []opened // provider → its state after the opening
	order  []int32  // the providers the opening reaches, in the order it does
	ready  bool
}

// want is provider j as requester i's candidate at position pos.
type want struct {
	i, pos int32
	cost   float64
}

// opened is a provider's distance and entering requester after the
// opening, when reached.
type opened struct {
	dist float64
	prev int32
}

// edge is a requester's edge to a candidate: the provider's node and the
// cost, the negated score.
type edge struct {
	to   int32
	cost float64
}

// hold is a requester held by a provider and the cost of its edge there.
type hold struct {
	i    int
	cost float64
}

// node is a node's search state: its distance, the node the cheapest
// path enters it by (-1 none), and in flags whether it was reached,
// whether it is in the queue and, from seenShift up, how often it entered.
type node struct {
	dist  float64
	prev  int32
	flags uint32
}

const (
	reached = 1 << iota
	inQ
	seenShift = iota
)

const source, sink = 0, 1

func newFlow(n int, free []int) *flow {
	g := &flow{n: n, free: free, edges: make([][]edge, n), back: make([]edge, 0, n*BatchK), match: make([]int, n), holds: make([][]hold, len(free)),
		used: make([]int, len(free)), eps: 1e-9,
		wanted: make([][]want, len(free)), first: make([]int32, len(free)), open: make([]opened, len(free))}
	nodes := 2 + n + len(free)
	g.nodes = make([]node, nodes)
	for i := range g.match {
		g.match[i] = -1
	}
	return g
}

// candidates gives requester i its edges, cs best first (copied).
func (g *flow) candidates(i int, cs []cand) {
	from := len(g.back)
	for _, c := range cs {
		g.back = append(g.back, edge{int32(2 + g.n + c.j), -c.s})
	}
	g.edges[i] = g.back[from:len(g.back):len(g.back)]
	// The edge list's eps folded every edge's cost, the worst first.
	for k := len(cs) - 1; k >= 0; k-- {
		g.eps = max(g.eps, 1e-9*(1+math.Abs(g.edges[i][k].cost)))
	}
}

// fold is provider j's state after the opening: the relaxations of the
// unmatched requesters wanting it, oldest first, each from distance +0.
func (g *flow) fold(j int) {
	ws := g.wanted[j][g.first[j]:]
	o := opened{prev: -1}
	for _, w := range ws {
		if g.match[w.i] >= 0 {
			continue
		}
		if d := 0.0 + w.cost; o.prev < 0 || !(d >= o.dist-g.eps) {
			o = opened{d, w.i}
		}
	}
	g.open[j] = o
}

// key orders the providers the opening reaches as it reaches them: by
// their first unmatched requester, then their place in its list.
func (g *flow) key(j int32) int64 {
	w := g.wanted[j][g.first[j]]
	return int64(w.i)<<32 | int64(w.pos)
}

// place is where the provider of key k is, or goes, in order.
func (g *flow) place(k int64) int {
	at, _ := slices.BinarySearchFunc(g.order, k, func(j int32, k int64) int { return cmp.Compare(g.key(j), k) })
	return at
}

// start computes the opening once all requesters have their candidates.
func (g *flow) start() {
	g.ready = true
	base := int32(2 + g.n)
	counts := make([]int, len(g.wanted))
	for _, e := range g.back {
		counts[e.to-base]++
	}
	all := make([]want, 0, len(g.back))
	for j, c := range counts {
		g.wanted[j] = all[len(all) : len(all) : len(all)+c]
		all = all[:len(all)+c]
	}
	for i, es := range g.edges {
		for k, e := range es {
			j := e.to - base
			g.wanted[j] = append(g.wanted[j], want{int32(i), int32(k), e.cost})
		}
	}
	for i, es := range g.edges {
		for _, e := range es {
			if j := e.to - int32(2+g.n); g.wanted[j][0].i == int32(i) {
				g.order = append(g.order, j)
			}
		}
	}
	for j := range g.wanted {
		if len(g.wanted[j]) > 0 {
			g.fold(j)
		}
	}
}

// leave redoes the opening without requester r, now matched.
func (g *flow) leave(r int) {
	for _, e := range g.edges[r] {
		j := e.to - int32(2+g.n)
		ws := g.wanted[j]
		if ws[g.first[j]].i == int32(r) {
			at := g.place(g.key(j))
			g.order = slices.Delete(g.order, at, at+1)
			for g.first[j] < int32(len(ws)) && g.match[ws[g.first[j]].i] >= 0 {
				g.first[j]++
			}
			if g.first[j] == int32(len(ws)) {
				g.open[j] = opened{prev: -1}
				continue
			}
			g.order = slices.Insert(g.order, g.place(g.key(j)), j)
		}
		g.fold(int(j))
	}
}

// augment sends one unit along a cheapest path from source to sink with
// SPFA and reports whether there was one. The residual network of a
// cheapest flow has no negative cycle, so the search settles; should
// rounding make one anyway, a node entering the queue more often than
// there are nodes stops the pass rather than loop.
func (g *flow) augment() bool {
	if !g.ready {
		g.start()
	}
	nodes := g.nodes
	for v := range nodes {
		nodes[v] = node{prev: -1}
	}
	limit := uint32(len(nodes))
	eps := g.eps
	// relax is the edge-list search's step along an edge of residual
	// capacity from u, at du, into v at d; false when v entered the queue
	// too often.
	relax := func(u, v int32, d float64) bool {
		nv := &nodes[v]
		if nv.flags&reached != 0 && d >= nv.dist-eps {
			return true
		}
		nv.dist, nv.prev = d, u
		if nv.flags&inQ == 0 {
			if nv.flags += 1 << seenShift; nv.flags>>seenShift > limit {
				return false
			}
			nv.flags |= reached | inQ
			g.queue = append(g.queue, v)
		} else {
			nv.flags |= reached
		}
		return true
	}
	negZero := math.Copysign(0, -1) // a reverse edge's cost, -0
	// The opening, as the search would leave it: the source and the
	// unmatched requesters visited, the providers they reach queued.
	nodes[source].flags = reached
	g.queue = append(g.queue[:0], source)
	for i, j := range g.match {
		if j < 0 {
			nodes[2+i] = node{dist: 0.0 + 0, prev: source, flags: reached | 1<<seenShift}
			g.queue = append(g.queue, int32(2+i))
		}
	}
	base := int32(2 + g.n)
	opening := len(g.queue)
	for _, j := range g.order {
		o := g.open[j]
		nodes[base+j] = node{dist: o.dist, prev: 2 + o.prev, flags: reached | inQ | 1<<seenShift}
		g.queue = append(g.queue, base+j)
	}
	for q := opening; q < len(g.queue); q++ {
		u := g.queue[q]
		nodes[u].flags &^= inQ
		// u's distance stays put while its edges are searched: none
		// leads back to u.
		du := nodes[u].dist
		switch {
		case u == source:
			for i, j := range g.match {
				if j < 0 && !relax(u, int32(2+i), du+0) {
					return false
				}
			}
		case u == sink:
			for _, j := range g.full {
				if !relax(u, base+int32(j), du+negZero) {
					return false
				}
			}
		case u < base:
			i := u - 2
			held := int32(-1)
			if j := g.match[i]; j >= 0 {
				if held = base + int32(j); !relax(u, source, du+negZero) {
					return false
				}
			}
			for _, e := range g.edges[i] {
				if e.to != held && !relax(u, e.to, du+e.cost) {
					return false
				}
			}
		default:
			j := u - base
			for _, h := range g.holds[j] {
				if !relax(u, int32(2+h.i), du+-h.cost) {
					return false
				}
			}
			if g.used[j] < g.free[j] && !relax(u, sink, du+0) {
				return false
			}
		}
	}
	if nodes[sink].flags&reached == 0 {
		return false
	}
	for v, base := sink, int(base); v != source; {
		u := int(nodes[v].prev)
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
			defer g.leave(v - 2)
		case u < base: // requester u moves to provider v
			i, j := u-2, v-base
			g.match[i] = j
			var cost float64
			for _, e := range g.edges[i] {
				if e.to == int32(v) {
					cost = e.cost
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
