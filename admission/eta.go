package admission

import (
	"math"
	"slices"
	"time"
)

// The ETA is told from what the admitter did, never from the configured
// rate alone: the admissions of the last RateWindow measure the rate, and
// the range spans the rates of its two halves, so a rate that is changing
// shows as a wider range rather than a wrong point. Until a queue has
// admitted anyone the configured rate stands in.

// RateWindow is how far back admissions measure a queue's rate.
const RateWindow = 60 * time.Second

// ETA is a waiter's predicted admission: Seconds from now, within [Low,
// High].
type ETA struct {
	Seconds, Low, High float64
	// Measured is false while no admission was seen in RateWindow (the
	// configured rate stood in).
	Measured bool
}

// Rates are the admission rates a prediction is made from, per second.
type Rates struct {
	Mean, Low, High float64
	Measured        bool
}

// MeasureRates reads the rates from the admissions' instants (any order)
// over the window ending at now; configured stands in when there are
// none.
func MeasureRates(admitted []time.Time, now time.Time, configured float64) Rates {
	from := now.Add(-RateWindow)
	mid := now.Add(-RateWindow / 2)
	var n, early, late int
	first := now
	for _, at := range admitted {
		if at.Before(from) || at.After(now) {
			continue
		}
		n++
		if at.Before(mid) {
			early++
		} else {
			late++
		}
		if at.Before(first) {
			first = at
		}
	}
	if n == 0 {
		return Rates{Mean: configured, Low: configured, High: configured}
	}
	// A queue that began admitting within the window is measured over the
	// time it has admitted, not the whole window.
	span := max(now.Sub(first).Seconds(), 1)
	mean := float64(n) / span
	half := RateWindow.Seconds() / 2
	lo, hi := mean, mean
	if span >= RateWindow.Seconds()*0.9 {
		e, l := float64(early)/half, float64(late)/half
		lo, hi = min(mean, e, l), max(mean, e, l)
	}
	return Rates{Mean: mean, Low: lo, High: hi, Measured: true}
}

// Predict is the ETA of a waiter with rank others ahead: the rank plus
// itself over the rate, the slowest and the fastest rate giving the range.
func (r Rates) Predict(rank int64) ETA {
	need := float64(rank + 1)
	at := func(rate float64) float64 {
		if rate <= 0 {
			return math.Inf(1)
		}
		return need / rate
	}
	return ETA{Seconds: at(r.Mean), Low: at(r.High), High: at(r.Low), Measured: r.Measured}
}

// ErrorStats are the ETA's errors over a queue's admissions: the relative
// error |actual − predicted| / actual wait, its median and 90th
// percentile, over N admissions.
type ErrorStats struct {
	N        int
	P50, P90 float64
}

// ETAErrors measures the error of the predictions made at entry.
func ETAErrors(places []Place) ErrorStats {
	var errs []float64
	for _, p := range places {
		if p.AdmittedAt.IsZero() || p.PredictedAt.IsZero() {
			continue
		}
		wait := p.AdmittedAt.Sub(p.EnteredAt).Seconds()
		miss := math.Abs(p.AdmittedAt.Sub(p.PredictedAt).Seconds())
		// A wait under a second is judged against a second: admitted at
		// once, any prediction within the second is right.
		errs = append(errs, miss/max(wait, 1))
	}
	if len(errs) == 0 {
		return ErrorStats{}
	}
	slices.Sort(errs)
	q := func(p float64) float64 { return errs[int(math.Ceil(p*float64(len(errs))))-1] }
	return ErrorStats{N: len(errs), P50: q(0.5), P90: q(0.9)}
}
