package ranking

import (
	"maps"
	"math"
	"testing"
)

func TestCarryFrom(t *testing.T) {
	prev := []Ranked{
		{Item: "c", Score: 5, Rank: 3},
		{Item: "a", Score: 50, Rank: 1},
		{Item: "b", Score: 20, Rank: 2},
		{Item: "d", Score: 0, Rank: 4},
		{Item: "e", Score: -3, Rank: 5},
		{Item: "f", Score: math.NaN(), Rank: 6},
	}
	cases := []struct {
		name string
		c    Carry
		want map[string]float64
	}{
		{"seed's 0.1 of the Top", Carry{Top: 100, Fraction: 0.1}, map[string]float64{"a": 5, "b": 2, "c": 0.5}},
		{"only the Top 2, in rank order whatever prev's order", Carry{Top: 2, Fraction: 0.5}, map[string]float64{"a": 25, "b": 10}},
		{"no carry", Carry{Top: 0, Fraction: 0.5}, map[string]float64{}},
		{"zero fraction", Carry{Top: 10, Fraction: 0}, map[string]float64{}},
		{"whole score", Carry{Top: 1, Fraction: 1}, map[string]float64{"a": 50}},
	}
	for _, c := range cases {
		got := CarryFrom(prev, c.c)
		if got == nil || !maps.EqualFunc(got, c.want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
			t.Errorf("%s: CarryFrom = %v, want %v", c.name, got, c.want)
		}
	}
	if got := CarryFrom(nil, Carry{Top: 5, Fraction: 0.1}); got == nil || len(got) != 0 {
		t.Errorf("CarryFrom(nil) = %v", got)
	}
	if got := CarryFrom([]Ranked{{Item: "x", Score: math.Inf(1)}}, Carry{Top: 5, Fraction: 0.1}); len(got) != 0 {
		t.Errorf("an infinite score carried: %v", got)
	}
}

// Days chained: day 2 ranks with day 1's carry, which held day 0's; the
// carry is part of the score and of the parts, and a carried item with no
// event on day 2 still ranks.
func TestCarryChain(t *testing.T) {
	w := map[string]Metric{"likes": {Weight: 1}}
	c := Carry{Top: 2, Fraction: 0.5}
	day0 := Rank(w, []ItemMetrics{
		{Item: "old", Metrics: map[string]float64{"likes": 100}, First: t0},
		{Item: "mid", Metrics: map[string]float64{"likes": 10}, First: t0},
		{Item: "low", Metrics: map[string]float64{"likes": 1}, First: t0},
	}, nil, 0)
	carry1 := CarryFrom(day0, c) // old 50, mid 5
	day1 := Rank(w, []ItemMetrics{{Item: "new", Metrics: map[string]float64{"likes": 8}, First: t0}}, carry1, 0)
	if day1[0].Item != "old" || day1[0].Score != 50 || day1[1].Item != "new" || day1[2].Item != "mid" || day1[2].Parts["carry"] != 5 {
		t.Fatalf("day 1 = %+v", day1)
	}
	carry2 := CarryFrom(day1, c) // old 25, new 4
	if !maps.Equal(carry2, map[string]float64{"old": 25, "new": 4}) {
		t.Fatalf("carry 2 = %v", carry2)
	}
}
