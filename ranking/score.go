package ranking

import (
	"maps"
	"math"
	"slices"
)

// Score is an item's score under the weights w and its carry:
//
//	carry + Σ weight · f(value)
//
// over w's metrics, f the metric's transform (log1p: ln(1+v), so a large
// count does not dominate), a metric the item lacks counting 0. parts holds
// each weighted metric's term, and PartCarry when carry ≠ 0: what the
// response shows so a rank can be explained. The sum starts from the carry
// and adds the terms in metric-name order, so a score is bit-identical on
// every run and in every process whatever a map's order.
//
// Score sorts w's names on each call; ranking many items, NewScorer sorts
// them once.
func Score(w map[string]Metric, m ItemMetrics, carry float64) (score float64, parts map[string]float64) {
	s := NewScorer(w)
	return s.Score(m, carry)
}

// Scorer scores items under one set of weights, the metrics' names sorted
// once. Its methods do not change it: one Scorer may serve goroutines at
// once.
type Scorer struct {
	names   []string
	metrics []Metric
}

// NewScorer prepares the weights w.
func NewScorer(w map[string]Metric) *Scorer {
	s := &Scorer{names: sortedNames(w)}
	s.metrics = make([]Metric, len(s.names))
	for i, n := range s.names {
		s.metrics[i] = w[n]
	}
	return s
}

// Value is Score's score without its parts, allocating nothing: the pass
// over every item computes it, and the parts only for those kept.
func (s *Scorer) Value(m ItemMetrics, carry float64) float64 {
	v := carry
	for i, n := range s.names {
		v += term(s.metrics[i], m.Metrics[n])
	}
	return v
}

// Score is the package's Score under s's weights.
func (s *Scorer) Score(m ItemMetrics, carry float64) (float64, map[string]float64) {
	parts := make(map[string]float64, len(s.names)+1)
	v := carry
	for i, n := range s.names {
		t := term(s.metrics[i], m.Metrics[n])
		parts[n] = t
		v += t
	}
	if carry != 0 {
		parts[PartCarry] = carry
	}
	return v, parts
}

// term is one metric's contribution. An unknown transform counts as none:
// CheckMetrics refuses it before weights are in force. The conversion
// rounds the product, which keeps the compiler from fusing it with the
// sum into one multiply-add (the spec allows that, arm64 does it): a
// score must be the same bits on every architecture.
func term(m Metric, v float64) float64 {
	if m.Transform == TransformLog1p {
		v = math.Log1p(v)
	}
	return float64(m.Weight * v)
}

func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
