package pool

// ordered is a sorted set's order kept as members come and go: by score,
// then member, as a Redis sorted set orders them and byScore sorts them. A
// skip list, so that a scan reads its range in O(log n + k) instead of
// sorting the partition on every call.
type ordered[S int64 | float64] struct {
	head  ixNode[S] // its next are the first node of each level
	tail  *ixNode[S]
	n     int
	level int
	rnd   uint64 // xorshift state: levels need no quality, only spread
}

type ixNode[S int64 | float64] struct {
	score S
	m     string
	mm    *memMember // m parsed, shared by its nodes in a partition's sets
	prev  *ixNode[S] // on level 0; nil for the first
	next  []*ixNode[S]
	// low holds next for the levels most nodes have (15 in 16 have one or
	// two): a node is then one allocation, not two.
	low [2]*ixNode[S]
}

const ixMaxLevel = 32

func newOrdered[S int64 | float64]() *ordered[S] {
	o := &ordered[S]{level: 1, rnd: 0x9e3779b97f4a7c15}
	o.head.next = make([]*ixNode[S], ixMaxLevel)
	return o
}

// below reports whether x sorts before (s, m).
func (x *ixNode[S]) below(s S, m string) bool {
	if x.score != s {
		return x.score < s
	}
	return x.m < m
}

func (o *ordered[S]) randomLevel() int {
	lvl := 1
	for lvl < ixMaxLevel {
		o.rnd ^= o.rnd << 13
		o.rnd ^= o.rnd >> 7
		o.rnd ^= o.rnd << 17
		if o.rnd&3 != 0 { // one in four goes up a level
			break
		}
		lvl++
	}
	return lvl
}

// path fills up with, on each level, the last node before (s, m).
func (o *ordered[S]) path(s S, m string, up *[ixMaxLevel]*ixNode[S]) {
	x := &o.head
	for l := o.level - 1; l >= 0; l-- {
		for x.next[l] != nil && x.next[l].below(s, m) {
			x = x.next[l]
		}
		up[l] = x
	}
}

// insert adds (s, m), carrying mm, and returns its node; m must not be
// in o.
func (o *ordered[S]) insert(s S, m string, mm *memMember) *ixNode[S] {
	var up [ixMaxLevel]*ixNode[S]
	o.path(s, m, &up)
	lvl := o.randomLevel()
	for l := o.level; l < lvl; l++ {
		up[l] = &o.head
	}
	o.level = max(o.level, lvl)
	x := &ixNode[S]{score: s, m: m, mm: mm}
	if lvl <= len(x.low) {
		x.next = x.low[:lvl]
	} else {
		x.next = make([]*ixNode[S], lvl)
	}
	for l := range lvl {
		x.next[l], up[l].next[l] = up[l].next[l], x
	}
	if up[0] != &o.head {
		x.prev = up[0]
	}
	if x.next[0] != nil {
		x.next[0].prev = x
	} else {
		o.tail = x
	}
	o.n++
	return x
}

// remove drops (s, m), if o holds it.
func (o *ordered[S]) remove(s S, m string) {
	var up [ixMaxLevel]*ixNode[S]
	o.path(s, m, &up)
	x := up[0].next[0]
	if x == nil || x.score != s || x.m != m {
		return
	}
	for l := range len(x.next) {
		up[l].next[l] = x.next[l]
	}
	if x.next[0] != nil {
		x.next[0].prev = x.prev
	} else {
		o.tail = x.prev
	}
	for o.level > 1 && o.head.next[o.level-1] == nil {
		o.level--
	}
	o.n--
}

// first is the lowest node, nil when o is empty.
func (o *ordered[S]) first() *ixNode[S] { return o.head.next[0] }

// find is the node of (s, m), nil when o does not hold it.
func (o *ordered[S]) find(s S, m string) *ixNode[S] {
	var up [ixMaxLevel]*ixNode[S]
	o.path(s, m, &up)
	if x := up[0].next[0]; x != nil && x.score == s && x.m == m {
		return x
	}
	return nil
}

// seek is the first node whose score is at least s (above s when after),
// nil when there is none.
func (o *ordered[S]) seek(s S, after bool) *ixNode[S] {
	x := &o.head
	for l := o.level - 1; l >= 0; l-- {
		for y := x.next[l]; y != nil && (y.score < s || (after && y.score == s)); y = x.next[l] {
			x = y
		}
	}
	return x.next[0]
}

// around is what byScore's slice [c-n, c+n) holds, c the position of at
// (the end of o when at is nil): up to n members before at, then at and up
// to n-1 after it, in order.
func (o *ordered[S]) around(at *ixNode[S], n int) []any {
	lo, k := o.span(at, n)
	var out []any
	for x := lo; k > 0; x, k = x.next[0], k-1 {
		out = append(out, x.m)
	}
	return out
}

// span is the nodes around holds: the first of them and how many.
func (o *ordered[S]) span(at *ixNode[S], n int) (*ixNode[S], int) {
	if n <= 0 {
		return nil, 0
	}
	p := o.tail
	if at != nil {
		p = at.prev
	}
	lo, k := at, 0 // the lowest taken
	for i := 0; i < n && p != nil; i++ {
		lo, p, k = p, p.prev, k+1
	}
	for i, x := 0, at; i < n && x != nil; i, x = i+1, x.next[0] {
		k++
	}
	return lo, k
}
