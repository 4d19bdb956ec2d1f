package ranking

import (
	"maps"
	"math"
	"math/rand/v2"
	"testing"
)

func TestScore(t *testing.T) {
	w := products().Metrics // views 1, likes 3, sales 5·log1p
	cases := []struct {
		name  string
		m     map[string]float64
		carry float64
		score float64
		parts map[string]float64
	}{
		{"seed's formula", map[string]float64{"views": 10, "likes": 2, "sales": math.E - 1}, 4,
			4 + 10 + 6 + 5, map[string]float64{"views": 10, "likes": 6, "sales": 5, "carry": 4}},
		{"absent metrics count 0", map[string]float64{"likes": 1}, 0,
			3, map[string]float64{"views": 0, "likes": 3, "sales": 0}},
		{"nil metrics, carry only", nil, 2.5,
			2.5, map[string]float64{"views": 0, "likes": 0, "sales": 0, "carry": 2.5}},
		{"unweighted metric ignored", map[string]float64{"views": 1, "shares": 100}, 0,
			1, map[string]float64{"views": 1, "likes": 0, "sales": 0}},
		{"negative carry shown", map[string]float64{"views": 1}, -1,
			0, map[string]float64{"views": 1, "likes": 0, "sales": 0, "carry": -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			score, parts := Score(w, ItemMetrics{Item: "x", Metrics: c.m}, c.carry)
			if math.Abs(score-c.score) > 1e-12 {
				t.Errorf("score = %v, want %v", score, c.score)
			}
			if len(parts) != len(c.parts) {
				t.Errorf("parts = %v, want %v", parts, c.parts)
			}
			for k, v := range c.parts {
				if got, ok := parts[k]; !ok || math.Abs(got-v) > 1e-12 {
					t.Errorf("parts[%s] = %v (%v), want %v", k, got, ok, v)
				}
			}
		})
	}
}

func TestScoreNegativeWeights(t *testing.T) {
	w := trending().Metrics // joins 1, matches 3, cancels -1
	score, parts := Score(w, ItemMetrics{Metrics: map[string]float64{"joins": 5, "matches": 1, "cancels": 9}}, 0)
	if score != -1 || parts["cancels"] != -9 || parts["matches"] != 3 || parts["joins"] != 5 {
		t.Fatalf("score %v parts %v", score, parts)
	}
	if _, ok := parts[PartCarry]; ok {
		t.Fatal("carry part without a carry")
	}
}

// randomWeights are weights with values of very different magnitudes, so
// the order of the sum changes its bits.
func randomWeights(rng *rand.Rand, n int) map[string]Metric {
	w := map[string]Metric{}
	for i := range n {
		m := Metric{Weight: (rng.Float64() - 0.3) * math.Pow(10, float64(rng.IntN(30)-15))}
		if rng.IntN(3) == 0 {
			m.Transform = TransformLog1p
		}
		w[string(rune('a'+i))+"m"] = m
	}
	return w
}

func randomMetrics(rng *rand.Rand, w map[string]Metric) map[string]float64 {
	m := map[string]float64{}
	for k := range w {
		if rng.IntN(4) > 0 {
			m[k] = math.Floor(rng.Float64() * math.Pow(10, float64(rng.IntN(12))))
		}
	}
	return m
}

// A score is the same bits on every call, whatever the maps' order (a copy
// of a map iterates differently), and Scorer.Value, Scorer.Score and Score
// agree bit for bit; the parts sum to the score within rounding.
func TestScoreBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		w := randomWeights(rng, 1+rng.IntN(12))
		m := ItemMetrics{Metrics: randomMetrics(rng, w)}
		carry := 0.0
		if rng.IntN(2) == 0 {
			carry = rng.Float64() * 1e6
		}
		want, parts := Score(w, m, carry)
		s := NewScorer(w)
		for range 5 {
			w2 := maps.Clone(w)
			m2 := ItemMetrics{Metrics: maps.Clone(m.Metrics)}
			got, _ := Score(w2, m2, carry)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("Score %x then %x", math.Float64bits(want), math.Float64bits(got))
			}
			if v := s.Value(m2, carry); math.Float64bits(v) != math.Float64bits(want) {
				t.Fatalf("Value %v, Score %v", v, want)
			}
		}
		// The reference: carry, then each term in name order.
		ref := carry
		for _, n := range sortedNames(w) {
			ref += parts[n]
		}
		if math.Float64bits(ref) != math.Float64bits(want) {
			t.Fatalf("score %v, parts summed in name order %v", want, ref)
		}
		if _, ok := parts[PartCarry]; ok != (carry != 0) || len(parts) != len(w)+btoi(carry != 0) {
			t.Fatalf("parts %v for %d weights and carry %v", parts, len(w), carry)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestScoreLog1p(t *testing.T) {
	w := map[string]Metric{"sales": {Weight: 2, Transform: TransformLog1p}}
	for _, v := range []float64{0, 1e-300, 1, 99, 1e12, math.MaxFloat64} {
		got, _ := Score(w, ItemMetrics{Metrics: map[string]float64{"sales": v}}, 0)
		if want := 2 * math.Log1p(v); got != want {
			t.Errorf("log1p(%v)·2 = %v, want %v", v, got, want)
		}
	}
}

func TestScorerValueAllocatesNothing(t *testing.T) {
	s := NewScorer(products().Metrics)
	m := ItemMetrics{Metrics: map[string]float64{"views": 3, "sales": 10}}
	if n := testing.AllocsPerRun(100, func() { s.Value(m, 1) }); n != 0 {
		t.Fatalf("Value allocates %v", n)
	}
}

// One Scorer serves goroutines at once (run with -race): every goroutine
// gets the bits a lone call gets.
func TestScorerConcurrent(t *testing.T) {
	s := NewScorer(products().Metrics)
	m := ItemMetrics{Metrics: map[string]float64{"views": 7, "likes": 2, "sales": 1234}}
	want := s.Value(m, 0.5)
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			for range 2000 {
				if v, _ := s.Score(m, 0.5); v != want || s.Value(m, 0.5) != want {
					errs <- "differs"
					return
				}
			}
			errs <- ""
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
