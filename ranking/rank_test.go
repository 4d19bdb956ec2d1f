package ranking

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

func TestAheadRule(t *testing.T) {
	cases := []struct {
		name string
		a, b Ranked
	}{
		{"higher score", Ranked{Item: "z", Score: 2, First: t0.Add(time.Hour)}, Ranked{Item: "a", Score: 1}},
		{"equal score, earlier first", Ranked{Item: "z", Score: 1, First: t0}, Ranked{Item: "a", Score: 1, First: t0.Add(time.Nanosecond)}},
		{"equal score and first, smaller id", Ranked{Item: "a", Score: 1, First: t0}, Ranked{Item: "b", Score: 1, First: t0}},
		{"carry-only (zero first) before a newcomer level with it", Ranked{Item: "z", Score: 1}, Ranked{Item: "a", Score: 1, First: t0}},
		{"-0 equals 0", Ranked{Item: "a", Score: math.Copysign(0, -1)}, Ranked{Item: "b", Score: 0}},
		{"any number before NaN", Ranked{Item: "z", Score: math.Inf(-1)}, Ranked{Item: "a", Score: math.NaN()}},
		{"same instant in another zone", Ranked{Item: "a", Score: 1, First: t0.In(time.FixedZone("x", 3600))}, Ranked{Item: "b", Score: 1, First: t0}},
		{"byte order of ids", Ranked{Item: "B", Score: 1}, Ranked{Item: "a", Score: 1}},
	}
	for _, c := range cases {
		if !Ahead(c.a, c.b) || Ahead(c.b, c.a) {
			t.Errorf("%s: Ahead(a, b) = %v, Ahead(b, a) = %v", c.name, Ahead(c.a, c.b), Ahead(c.b, c.a))
		}
	}
}

// randomRanked draws from a small space so that ties on score and on
// First are common, with NaN, ±Inf and -0 among the scores.
func randomRanked(rng *rand.Rand) Ranked {
	scores := []float64{math.NaN(), math.Inf(-1), -1, math.Copysign(0, -1), 0, 1, 2, math.Inf(1)}
	r := Ranked{Item: fmt.Sprintf("i%d", rng.IntN(20)), Score: scores[rng.IntN(len(scores))]}
	if k := rng.IntN(4); k > 0 {
		r.First = t0.Add(time.Duration(k) * time.Minute)
	}
	return r
}

// Ahead is a strict weak order that is total on distinct items:
// irreflexive, asymmetric, transitive, and two items are tied only when
// they are the same item with the same score and First.
func TestAheadIsATotalOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		a, b, c := randomRanked(rng), randomRanked(rng), randomRanked(rng)
		if Ahead(a, a) {
			t.Fatalf("Ahead(%v, itself)", a)
		}
		if Ahead(a, b) && Ahead(b, a) {
			t.Fatalf("Ahead both ways: %v %v", a, b)
		}
		if Ahead(a, b) && Ahead(b, c) && !Ahead(a, c) {
			t.Fatalf("not transitive: %v %v %v", a, b, c)
		}
		if !Ahead(a, b) && !Ahead(b, a) && a.Item != b.Item {
			t.Fatalf("distinct items tied: %v %v", a, b)
		}
		if (compareRanked(a, b) < 0) != Ahead(a, b) || (compareRanked(a, b) == 0) != (!Ahead(a, b) && !Ahead(b, a)) {
			t.Fatalf("compareRanked disagrees with Ahead on %v %v", a, b)
		}
	}
}

func TestRank(t *testing.T) {
	w := products().Metrics
	items := []ItemMetrics{
		{Item: "b", Metrics: map[string]float64{"views": 3}, First: t0.Add(2 * time.Minute)},
		{Item: "a", Metrics: map[string]float64{"likes": 1}, First: t0.Add(3 * time.Minute)},  // 3, later: behind b
		{Item: "c", Metrics: map[string]float64{"views": 3}, First: t0.Add(2 * time.Minute)},  // 3, same First as b: by id
		{Item: "d", Metrics: map[string]float64{"views": 10}, First: t0.Add(9 * time.Minute)}, // 10 + carry 1
		{Item: "e", Metrics: map[string]float64{}, First: t0},
	}
	carry := map[string]float64{"d": 1, "y": 3, "x": 4}
	got := Rank(w, items, carry, 0)
	want := []struct {
		item  string
		score float64
	}{{"d", 11}, {"x", 4}, {"y", 3}, {"b", 3}, {"c", 3}, {"a", 3}, {"e", 0}}
	if len(got) != len(want) {
		t.Fatalf("Rank = %v", got)
	}
	for i, r := range got {
		if r.Item != want[i].item || r.Score != want[i].score || r.Rank != i+1 {
			t.Errorf("#%d = %s %v rank %d, want %s %v", i+1, r.Item, r.Score, r.Rank, want[i].item, want[i].score)
		}
	}
	// Parts explain the score; carried-only items have empty metrics.
	if d := got[0]; d.Parts["carry"] != 1 || d.Parts["views"] != 10 || d.Metrics["views"] != 10 {
		t.Errorf("d = %+v", d)
	}
	if x := got[1]; x.Metrics == nil || len(x.Metrics) != 0 || x.Parts["carry"] != 4 || !x.First.IsZero() {
		t.Errorf("x = %+v", x)
	}
	if b := got[3]; len(b.Parts) != 3 {
		t.Errorf("b's parts %v, want one per weighted metric and no carry", b.Parts)
	}
	top2 := Rank(w, items, carry, 2)
	if len(top2) != 2 || top2[0].Item != "d" || top2[1].Item != "x" || top2[1].Rank != 2 {
		t.Errorf("Rank(limit 2) = %v", top2)
	}
	if got := Rank(w, nil, nil, 10); len(got) != 0 {
		t.Errorf("Rank of nothing = %v", got)
	}
}

// referenceRank is Rank by the book: score everything, sort by Ahead.
func referenceRank(w map[string]Metric, items []ItemMetrics, carry map[string]float64) []Ranked {
	var all []Ranked
	seen := map[string]bool{}
	for _, m := range items {
		seen[m.Item] = true
		s, _ := Score(w, m, carry[m.Item])
		all = append(all, Ranked{Item: m.Item, Score: s, First: m.First})
	}
	for item, c := range carry {
		if !seen[item] {
			all = append(all, Ranked{Item: item, Score: c})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return Ahead(all[i], all[j]) })
	return all
}

func randomItems(rng *rand.Rand, w map[string]Metric, n int) ([]ItemMetrics, map[string]float64) {
	items := make([]ItemMetrics, n)
	for i := range items {
		m := map[string]float64{}
		for k := range w {
			if rng.IntN(3) > 0 {
				m[k] = float64(rng.IntN(4)) // small values: many equal scores
			}
		}
		items[i] = ItemMetrics{Item: fmt.Sprintf("item-%04d", rng.IntN(10*n+1)), Metrics: m, First: t0.Add(time.Duration(rng.IntN(3)) * time.Hour)}
	}
	// Distinct items, as a scan gives them.
	slices.SortFunc(items, func(a, b ItemMetrics) int { return cmpString(a.Item, b.Item) })
	items = slices.CompactFunc(items, func(a, b ItemMetrics) bool { return a.Item == b.Item })
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	carry := map[string]float64{}
	for range rng.IntN(n/2 + 1) {
		carry[fmt.Sprintf("item-%04d", rng.IntN(10*n+1))] = float64(rng.IntN(4))
	}
	return items, carry
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Rank, TopN in any order of arrival, and RankOf agree with the
// reference on random boards full of ties.
func TestRankMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 500 {
		w := map[string]Metric{"am": {Weight: 1}, "bm": {Weight: 2}, "cm": {Weight: -1, Transform: TransformLog1p}}
		items, carry := randomItems(rng, w, 1+rng.IntN(60))
		ref := referenceRank(w, items, carry)
		limit := rng.IntN(len(ref) + 3)
		got := Rank(w, items, carry, limit)
		n := len(ref)
		if limit > 0 && limit < n {
			n = limit
		}
		if len(got) != n {
			t.Fatalf("round %d: %d ranked, want %d", round, len(got), n)
		}
		for i := range got {
			if got[i].Item != ref[i].Item || math.Float64bits(got[i].Score) != math.Float64bits(ref[i].Score) || got[i].Rank != i+1 {
				t.Fatalf("round %d #%d: %s %v, want %s %v", round, i+1, got[i].Item, got[i].Score, ref[i].Item, ref[i].Score)
			}
		}
		// Every item's RankOf is its place in the full ranking.
		scan := func(fn func(ItemMetrics) error) error {
			for _, m := range items {
				if err := fn(m); err != nil {
					return err
				}
			}
			return nil
		}
		byItem := map[string]ItemMetrics{}
		for _, m := range items {
			byItem[m.Item] = m
		}
		for i, r := range ref {
			target, ok := byItem[r.Item]
			if !ok {
				target = ItemMetrics{Item: r.Item}
			}
			me, err := RankOf(w, target, carry, scan)
			if err != nil {
				t.Fatal(err)
			}
			if me.Rank != i+1 || math.Float64bits(me.Score) != math.Float64bits(r.Score) {
				t.Fatalf("round %d: RankOf(%s) = %d %v, want %d %v", round, r.Item, me.Rank, me.Score, i+1, r.Score)
			}
		}
	}
}

func TestTopNArrivalOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 1000 {
		rs := make([]Ranked, rng.IntN(200))
		for i := range rs {
			rs[i] = randomRanked(rng)
			rs[i].Item = fmt.Sprintf("%s-%d", rs[i].Item, i) // distinct items
		}
		want := slices.Clone(rs)
		slices.SortFunc(want, compareRanked)
		n := 1 + rng.IntN(50)
		top := NewTopN(n)
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		for _, r := range rs {
			top.Add(r)
		}
		got := top.Result()
		if len(got) != min(n, len(rs)) || top.Len() != len(got) {
			t.Fatalf("round %d: kept %d of %d with n %d", round, len(got), len(rs), n)
		}
		for i := range got {
			if got[i].Item != want[i].Item || got[i].Rank != i+1 {
				t.Fatalf("round %d #%d: %s, want %s", round, i+1, got[i].Item, want[i].Item)
			}
		}
		// Result leaves the heap as it was: adding more still works.
		if again := top.Result(); !slices.EqualFunc(again, got, func(a, b Ranked) bool { return a.Item == b.Item }) {
			t.Fatalf("round %d: second Result differs", round)
		}
	}
}

func TestTopNNothing(t *testing.T) {
	for _, n := range []int{0, -5} {
		top := NewTopN(n)
		top.Add(Ranked{Item: "a", Score: 1})
		if got := top.Result(); len(got) != 0 {
			t.Errorf("NewTopN(%d) kept %v", n, got)
		}
	}
}

func TestRankOfScanError(t *testing.T) {
	boom := errors.New("boom")
	_, err := RankOf(products().Metrics, ItemMetrics{Item: "a"}, nil, func(fn func(ItemMetrics) error) error {
		if err := fn(ItemMetrics{Item: "b"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("RankOf = %v", err)
	}
}

// A target without an event ranks by its carry; an item with neither
// ranks behind everything that scores more.
func TestRankOfCarryOnly(t *testing.T) {
	w := products().Metrics
	items := []ItemMetrics{{Item: "a", Metrics: map[string]float64{"views": 5}, First: t0}, {Item: "b", Metrics: map[string]float64{"views": 1}, First: t0}}
	scan := func(fn func(ItemMetrics) error) error {
		for _, m := range items {
			if err := fn(m); err != nil {
				return err
			}
		}
		return nil
	}
	carry := map[string]float64{"z": 2, "a": 1}
	me, err := RankOf(w, ItemMetrics{Item: "z"}, carry, scan)
	if err != nil || me.Rank != 2 || me.Score != 2 || me.Parts["carry"] != 2 || me.Metrics == nil {
		t.Fatalf("RankOf(z) = %+v, %v", me, err)
	}
	me, err = RankOf(w, ItemMetrics{Item: "nobody"}, carry, scan)
	if err != nil || me.Rank != 4 || me.Score != 0 {
		t.Fatalf("RankOf(nobody) = %+v, %v", me, err)
	}
}
