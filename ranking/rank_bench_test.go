package ranking

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchItems are n distinct items sharing 4096 metric maps (a million maps
// of their own would measure the allocator, not the ranking), with many
// equal scores and Firsts.
func benchItems(n int) []ItemMetrics {
	rng := rand.New(rand.NewPCG(11, 12))
	shapes := make([]map[string]float64, 4096)
	for i := range shapes {
		shapes[i] = map[string]float64{"views": float64(rng.IntN(1000)), "likes": float64(rng.IntN(50)), "sales": float64(rng.IntN(100000))}
	}
	items := make([]ItemMetrics, n)
	for i := range items {
		items[i] = ItemMetrics{Item: fmt.Sprintf("sku-%07d", i), Metrics: shapes[rng.IntN(len(shapes))], First: t0.Add(time.Duration(rng.IntN(3600)) * time.Second)}
	}
	return items
}

// BenchmarkTopN1M ranks a million items' Top 100: one op is the whole
// pass. Rank scores each item without its parts (Scorer.Value) and
// computes the parts of the hundred kept; ScoreParts calls Score, parts
// and all, for every item, to show what that would cost.
func BenchmarkTopN1M(b *testing.B) {
	items := benchItems(1_000_000)
	w := products().Metrics
	carry := map[string]float64{}
	for i := range 100 {
		carry[fmt.Sprintf("sku-%07d", i*9973)] = float64(i)
	}
	b.Run("Rank", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rs := Rank(w, items, carry, 100); len(rs) != 100 {
				b.Fatal(len(rs))
			}
		}
	})
	b.Run("ScoreParts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			top := NewTopN(100)
			for _, m := range items {
				s, parts := Score(w, m, carry[m.Item])
				top.Add(Ranked{Item: m.Item, Score: s, Metrics: m.Metrics, Parts: parts, First: m.First})
			}
			if rs := top.Result(); len(rs) != 100 {
				b.Fatal(len(rs))
			}
		}
	})
}
