package ranking_test

import (
	"fmt"
	"time"

	"github.com/matchgate/matchgate/ranking"
)

// A day's products board: yesterday's Top carries a tenth of its score
// into today; equal scores rank the item that got there first ahead.
func ExampleRank() {
	w := map[string]ranking.Metric{
		"views": {Weight: 1},
		"likes": {Weight: 3},
		"sales": {Weight: 5, Transform: ranking.TransformLog1p},
	}
	day := ranking.PeriodOf(ranking.WindowDay, time.Date(2026, 12, 2, 15, 4, 0, 0, time.UTC))
	yesterday := []ranking.Ranked{{Item: "lamp", Score: 40}, {Item: "desk", Score: 10}}
	carry := ranking.CarryFrom(yesterday, ranking.Carry{Top: 100, Fraction: 0.1})
	items := []ranking.ItemMetrics{
		{Item: "chair", Metrics: map[string]float64{"views": 3, "likes": 1}, First: day.Start.Add(2 * time.Hour)},
		{Item: "stool", Metrics: map[string]float64{"views": 6}, First: day.Start.Add(time.Hour)},
		{Item: "desk", Metrics: map[string]float64{"views": 2}, First: day.Start.Add(3 * time.Hour)},
	}
	fmt.Println(day)
	for _, r := range ranking.Rank(w, items, carry, 10) {
		fmt.Printf("%d %s %.0f views=%.0f carry=%.0f\n", r.Rank, r.Item, r.Score, r.Parts["views"], r.Parts["carry"])
	}
	// Output:
	// 2026-12-02
	// 1 stool 6 views=6 carry=0
	// 2 chair 6 views=3 carry=0
	// 3 lamp 4 views=0 carry=4
	// 4 desk 3 views=2 carry=1
}
