package protocol

import (
	"encoding/json"
	"math"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/matcher"
)

// WireQueue is one queue of GET /v1/queues, written as the one of its two
// shapes it holds: a matched queue (skill, room) with its depths and
// recent outcomes, or an admission queue (kind "admission") with its
// rates and the error of its ETAs.
type WireQueue struct {
	Matched   *matcher.QueueInfo
	Admission *WireAdmissionQueue
}

// MarshalJSON writes the shape q holds.
func (q WireQueue) MarshalJSON() ([]byte, error) {
	if q.Admission != nil {
		return json.Marshal(q.Admission)
	}
	return json.Marshal(q.Matched)
}

// WireAdmissionQueue is an admission queue in the list: its configured
// rate, the waiters in its line, the rate measured from its admissions of
// the last minute (the configured rate, measured false, until there are
// any), and the error of the ETAs given at entry over the admissions of
// the last ten minutes.
type WireAdmissionQueue struct {
	Name         string       `json:"name"`
	Kind         string       `json:"kind"`
	Rate         int          `json:"rate"`
	Waiting      int64        `json:"waiting"`
	MeasuredRate WireRates    `json:"measuredRate"`
	ETAError     WireETAError `json:"etaError"`
}

// WireRates are admissions per second, to a hundredth: the mean over the
// window and the slowest and fastest of its halves.
type WireRates struct {
	Mean     float64 `json:"mean"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	Measured bool    `json:"measured"`
}

// WireETAError is the ETA's relative error, |admitted − predicted| ÷ the
// wait, to a thousandth: its median and 90th percentile over Admissions
// admissions, null without any.
type WireETAError struct {
	P50        *float64 `json:"p50"`
	P90        *float64 `json:"p90"`
	Admissions int      `json:"admissions"`
}

// AdmissionQueueOf is s in the list's shape.
func AdmissionQueueOf(s admission.QueueStats) WireQueue {
	e := WireETAError{Admissions: s.ETAError.N}
	if s.ETAError.N > 0 {
		p50, p90 := round(s.ETAError.P50, 1000), round(s.ETAError.P90, 1000)
		e.P50, e.P90 = &p50, &p90
	}
	return WireQueue{Admission: &WireAdmissionQueue{
		Name: s.Queue.Name, Kind: matcher.KindAdmission, Rate: s.Queue.Rate, Waiting: s.Waiting,
		MeasuredRate: WireRates{
			Mean: round(s.Rates.Mean, 100), Low: round(s.Rates.Low, 100), High: round(s.Rates.High, 100),
			Measured: s.Rates.Measured,
		},
		ETAError: e,
	}}
}

// round rounds x to 1/per; a number that is not finite is 0, so that
// every one can be written.
func round(x, per float64) float64 {
	if !finite(x) {
		return 0
	}
	return math.Round(x*per) / per
}
