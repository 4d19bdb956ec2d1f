package ranking

import (
	"math"
	"slices"
)

// CarryFrom is the carry a day's ranking prev gives the next day: each of
// its first c.Top items by Ahead with a positive, finite score seeds the
// next day at c.Fraction × that score, so yesterday's leaders do not
// vanish at midnight UTC (a negative or zero score carries nothing: a carry never
// pushes an item down). c.Top = 0 carries nothing. The map is never nil.
//
// prev is a ranking under the weights in force, its own carry included,
// so a day's ranking holds the previous day's carry, which held the day
// before's, and so on: a geometric tail, c.Fraction per day, cut where
// the retention ends (the oldest retained day ranks with no carry, over
// what is left of it). Nothing of it is stored: a change of weights
// re-ranks the chain from the metrics, carry included.
func CarryFrom(prev []Ranked, c Carry) map[string]float64 {
	out := map[string]float64{}
	if c.Top <= 0 || !(c.Fraction > 0) {
		return out
	}
	rs := slices.Clone(prev)
	slices.SortFunc(rs, compareRanked)
	for _, r := range rs {
		if len(out) == c.Top {
			break
		}
		if _, dup := out[r.Item]; dup || !(r.Score > 0) || math.IsInf(r.Score, 0) {
			continue
		}
		out[r.Item] = c.Fraction * r.Score
	}
	return out
}
