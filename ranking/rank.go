package ranking

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Ranked is an item's place in one window's period: its rank (1-based),
// score, metrics, each term's part of the score (and PartCarry's), and
// the instant of its first event in the period.
type Ranked struct {
	Item    string
	Rank    int
	Score   float64
	Metrics map[string]float64
	Parts   map[string]float64
	First   time.Time
}

// Ahead reports whether a ranks before b: the higher score; on equal
// scores the earlier First (the item that reached the score first, as
// far as the hour buckets tell: its first event in the period); then the
// smaller item id, byte-wise. Unlike a Redis sorted set's order of equal
// scores (by member name), a newcomer never passes an item it only drew
// level with.
//
// It is a strict total order over distinct items: scores compare as
// cmp.Compare does (a NaN, which opposite infinite terms could make,
// sorts below every number; -0 equals 0), instants by Time.Compare (the
// zero First of an item ranked only by its carry is the earliest: it held
// its score from the period's start).
func Ahead(a, b Ranked) bool {
	if c := cmp.Compare(a.Score, b.Score); c != 0 {
		return c > 0
	}
	if c := a.First.Compare(b.First); c != 0 {
		return c < 0
	}
	return a.Item < b.Item
}

// compareRanked orders by Ahead, for slices.SortFunc.
func compareRanked(a, b Ranked) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	if c := a.First.Compare(b.First); c != 0 {
		return c
	}
	return strings.Compare(a.Item, b.Item)
}

// Rank ranks items, each scored under w with its carry, and the carried
// items without an event in the span (empty metrics, zero First), and
// returns the first limit by Ahead with ranks 1, 2, …; limit ≤ 0 returns
// them all. Items must name distinct items (Record.Scan's do). Metrics
// are the items' own maps, not copies.
//
// An item outside the Top N has the rank 1 + the number of items ahead of
// it (RankOf counts them in one scan, in constant memory).
func Rank(w map[string]Metric, items []ItemMetrics, carry map[string]float64, limit int) []Ranked {
	if total := len(items) + len(carry); limit <= 0 || limit > total {
		limit = total
	}
	r := NewRanker(w, carry, limit)
	for _, m := range items {
		r.Add(m)
	}
	return r.Result()
}

// Ranker is Rank over a stream: items are added one by one (a Scan's
// callback), and only the first limit are kept, so ranking a million
// items holds limit of them, not a million. Not safe for concurrent use.
type Ranker struct {
	s     *Scorer
	carry map[string]float64
	seen  map[string]bool
	top   *TopN
}

// NewRanker ranks under w with carry, keeping the first limit (≥ 1).
func NewRanker(w map[string]Metric, carry map[string]float64, limit int) *Ranker {
	return &Ranker{s: NewScorer(w), carry: carry, seen: make(map[string]bool, len(carry)), top: NewTopN(limit)}
}

// Add offers one item (distinct from those before); its maps are kept,
// not copied.
func (r *Ranker) Add(m ItemMetrics) {
	c, ok := r.carry[m.Item]
	if ok {
		r.seen[m.Item] = true
	}
	r.top.Add(Ranked{Item: m.Item, Score: r.s.Value(m, c), Metrics: m.Metrics, First: m.First})
}

// Result adds the carried items not seen (empty metrics, zero First) and
// returns the first limit, ranked, with their parts. Call it once.
func (r *Ranker) Result() []Ranked {
	for item, c := range carryOnly(r.carry, r.seen) {
		r.top.Add(Ranked{Item: item, Score: c, Metrics: map[string]float64{}})
	}
	rs := r.top.Result()
	for i := range rs {
		_, rs[i].Parts = r.s.Score(ItemMetrics{Metrics: rs[i].Metrics}, r.carry[rs[i].Item])
	}
	return rs
}

// carryOnly yields the carried items not in seen, in item order so that
// equal inputs give equal work.
func carryOnly(carry map[string]float64, seen map[string]bool) func(func(string, float64) bool) {
	return func(yield func(string, float64) bool) {
		for _, item := range sortedNames(carry) {
			if !seen[item] && !yield(item, carry[item]) {
				return
			}
		}
	}
}

// TopN keeps the first n of a stream of Ranked by Ahead in O(n) memory
// and O(log n) per Add: a heap whose root is the last kept, so a million
// items pass with a comparison each once it is full. Not safe for
// concurrent use.
type TopN struct {
	n int
	h []Ranked // h[0] is behind every other kept item
}

// NewTopN keeps the first n; n < 1 keeps nothing.
func NewTopN(n int) *TopN {
	return &TopN{n: n, h: make([]Ranked, 0, max(0, min(n, 1<<12)))}
}

// Add offers r. Its maps are kept, not copied.
func (t *TopN) Add(r Ranked) {
	switch {
	case t.n < 1:
	case len(t.h) < t.n:
		t.h = append(t.h, r)
		t.up(len(t.h) - 1)
	case Ahead(r, t.h[0]):
		t.h[0] = r
		t.down(0)
	}
}

// Len is how many are kept.
func (t *TopN) Len() int { return len(t.h) }

// Result is the kept items in order, ranked 1, 2, …; t is unchanged and
// may take more.
func (t *TopN) Result() []Ranked {
	rs := slices.Clone(t.h)
	slices.SortFunc(rs, compareRanked)
	for i := range rs {
		rs[i].Rank = i + 1
	}
	return rs
}

// behind reports whether h[i] should sit above h[j]: the heap's order is
// Ahead reversed.
func (t *TopN) behind(i, j int) bool { return Ahead(t.h[j], t.h[i]) }

func (t *TopN) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.behind(i, p) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *TopN) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(t.h) {
			return
		}
		c := l
		if r := l + 1; r < len(t.h) && t.behind(r, l) {
			c = r
		}
		if !t.behind(c, i) {
			return
		}
		t.h[i], t.h[c] = t.h[c], t.h[i]
		i = c
	}
}

// RankOf places target — an item's metrics over a span, as Record.Item
// gives them — among the items scan yields (Record.Scan over the same
// span) and the carried ones without an event there: its rank is 1 + the
// number of items ahead of it by Ahead, counted in one pass without
// keeping them, so an item far outside the Top N gets its exact rank. A
// target without an event in the span ranks by its carry alone (pass its
// id, nil metrics and a zero First). scan's error is returned, wrapped.
func RankOf(w map[string]Metric, target ItemMetrics, carry map[string]float64, scan func(fn func(ItemMetrics) error) error) (Ranked, error) {
	s := NewScorer(w)
	me := Ranked{Item: target.Item, Metrics: target.Metrics, First: target.First}
	me.Score, me.Parts = s.Score(target, carry[target.Item])
	if me.Metrics == nil {
		me.Metrics = map[string]float64{}
	}
	ahead := 0
	seen := make(map[string]bool, len(carry))
	err := scan(func(m ItemMetrics) error {
		if _, ok := carry[m.Item]; ok {
			seen[m.Item] = true
		}
		if m.Item == target.Item {
			return nil
		}
		if Ahead(Ranked{Item: m.Item, Score: s.Value(m, carry[m.Item]), First: m.First}, me) {
			ahead++
		}
		return nil
	})
	if err != nil {
		return Ranked{}, fmt.Errorf("rank of %q: %w", target.Item, err)
	}
	for item, c := range carryOnly(carry, seen) {
		if item != target.Item && Ahead(Ranked{Item: item, Score: c}, me) {
			ahead++
		}
	}
	me.Rank = ahead + 1
	return me, nil
}
