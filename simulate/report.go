package simulate

import (
	"math"
	"slices"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Report is a run's outcome: a summary of the scenario and one report a config.
type Report struct {
	Scenario ScenarioSummary `json:"scenario"`
	Configs  []ConfigReport  `json:"configs"`
}

// ScenarioSummary is what the stream was.
type ScenarioSummary struct {
	Seed     uint64    `json:"seed"`
	Start    time.Time `json:"start"`
	Duration string    `json:"duration"`
	Rate     float64   `json:"rate"`
	Shape    []float64 `json:"shape"`
}

func summarize(sc *Scenario) ScenarioSummary {
	shape := make([]float64, 24)
	for i, v := range sc.Arrivals.Shape {
		shape[i] = round(v, 4)
	}
	return ScenarioSummary{Seed: sc.Seed, Start: sc.Start, Duration: sc.Duration.String(), Rate: sc.Arrivals.Rate, Shape: shape}
}

// ConfigReport is what one config did with the stream. Fractions of
// tickets are of the joins; fractions of matches of the matches played
// (READY: formed without an accept window, or accepted by all).
type ConfigReport struct {
	Name string `json:"name"`
	// Joins is the tickets the stream made; Matched, Cancelled (by their
	// player), Declined, AcceptTimeout (silent through an accept window),
	// Expired (no match by the deadline) and Other (any other cancel) how
	// they ended; WaitingAtEnd the few left when the run stopped.
	Joins         int64 `json:"joins"`
	Matched       int64 `json:"matched"`
	Cancelled     int64 `json:"cancelled"`
	Declined      int64 `json:"declined"`
	AcceptTimeout int64 `json:"acceptTimeout"`
	Expired       int64 `json:"expired"`
	Other         int64 `json:"other"`
	WaitingAtEnd  int64 `json:"waitingAtEnd"`

	MatchedFraction   float64 `json:"matchedFraction"`
	CancelledFraction float64 `json:"cancelledFraction"` // cancelled + declined + accept timeout
	ExpiredFraction   float64 `json:"expiredFraction"`

	// Matches played, by how the engine formed them (Match.FormedBy).
	Matches          int64   `json:"matches"`
	FilledFraction   float64 `json:"filledFraction"`
	FallbackFraction float64 `json:"fallbackFraction"`
	TimeoutFraction  float64 `json:"timeoutFraction"`
	Dissolved        int64   `json:"dissolved"`
	Bots             int64   `json:"bots"`
	MatchesPerHour   float64 `json:"matchesPerHour"`

	// Wait is from join to the match played, in seconds, of every player
	// seated; Spread the skill spread of the matches played.
	WaitP50   float64 `json:"waitP50"`
	WaitP90   float64 `json:"waitP90"`
	WaitP99   float64 `json:"waitP99"`
	SpreadP50 float64 `json:"spreadP50"`
	SpreadP90 float64 `json:"spreadP90"`

	// Passes is the engine passes run, PassErrors those that failed (none
	// should: every store is in memory).
	Passes     int64 `json:"passes"`
	PassErrors int64 `json:"passErrors"`

	// Hours is the same by hour of the day (UTC, modulo 24): tickets by
	// the hour they joined, matches by the hour they formed.
	Hours []HourReport `json:"hours"`

	// Provider is set for a provider queue only (providers.go).
	Provider *ProviderReport `json:"provider,omitempty"`
}

// HourReport is one hour of the day.
type HourReport struct {
	Hour              int     `json:"hour"`
	Joins             int64   `json:"joins"`
	Matches           int64   `json:"matches"`
	WaitP50           float64 `json:"waitP50"`
	WaitP90           float64 `json:"waitP90"`
	WaitP99           float64 `json:"waitP99"`
	SpreadP50         float64 `json:"spreadP50"`
	SpreadP90         float64 `json:"spreadP90"`
	TimeoutFraction   float64 `json:"timeoutFraction"`
	ExpiredFraction   float64 `json:"expiredFraction"`
	CancelledFraction float64 `json:"cancelledFraction"`
	// Provider is set for a provider queue only.
	Provider *HourProvider `json:"provider,omitempty"`
}

// Ticket outcomes other than a match.
const (
	outCancelled = iota
	outDeclined
	outAcceptTimeout
	outExpired
	outOther
	nOutcomes
)

// hourAcc is what one hour of the day gathered.
type hourAcc struct {
	joins    int64
	outcomes [nOutcomes]int64
	waits    []int32 // ms, of the players who joined this hour
	matches  int64
	byForm   [3]int64 // filled, fallback, timeout
	bots     int64
	spreads  []float32 // of the matches formed this hour
}

// accum gathers a run's figures.
type accum struct {
	hours                 [24]hourAcc
	joins, passes         int64
	passErrors, dissolved int64
	waitingAtEnd          int64
}

func newAccum() *accum { return &accum{} }

func (a *accum) joined(hr int) {
	a.joins++
	a.hours[hr].joins++
}

func (a *accum) resolved(hr, out int) { a.hours[hr].outcomes[out]++ }

func (a *accum) seated(hr int, wait time.Duration) {
	h := &a.hours[hr]
	h.waits = append(h.waits, int32(min(wait.Milliseconds(), math.MaxInt32)))
}

func (a *accum) match(m matcher.Match) {
	h := &a.hours[m.CreatedAt.UTC().Hour()]
	h.matches++
	switch m.FormedBy {
	case matcher.FormedFilled:
		h.byForm[0]++
	case matcher.FormedFallback:
		h.byForm[1]++
	case matcher.FormedTimeout:
		h.byForm[2]++
	}
	h.bots += int64(m.Bots)
	h.spreads = append(h.spreads, float32(m.Spread))
}

// report sums the hours up. The hours' samples are sorted in place.
func (a *accum) report(name string, sc *Scenario) *ConfigReport {
	r := &ConfigReport{Name: name, Joins: a.joins, Passes: a.passes, PassErrors: a.passErrors,
		Dissolved: a.dissolved, WaitingAtEnd: a.waitingAtEnd}
	var (
		waits   []int32
		spreads []float32
		byForm  [3]int64
	)
	for hr := range a.hours {
		h := &a.hours[hr]
		slices.Sort(h.waits)
		slices.Sort(h.spreads)
		waits = append(waits, h.waits...)
		spreads = append(spreads, h.spreads...)
		r.Matched += int64(len(h.waits))
		r.Cancelled += h.outcomes[outCancelled]
		r.Declined += h.outcomes[outDeclined]
		r.AcceptTimeout += h.outcomes[outAcceptTimeout]
		r.Expired += h.outcomes[outExpired]
		r.Other += h.outcomes[outOther]
		r.Matches += h.matches
		r.Bots += h.bots
		for i := range byForm {
			byForm[i] += h.byForm[i]
		}
		cancelled := h.outcomes[outCancelled] + h.outcomes[outDeclined] + h.outcomes[outAcceptTimeout]
		r.Hours = append(r.Hours, HourReport{
			Hour: hr, Joins: h.joins, Matches: h.matches,
			WaitP50: waitAt(h.waits, 0.5), WaitP90: waitAt(h.waits, 0.9), WaitP99: waitAt(h.waits, 0.99),
			SpreadP50: spreadAt(h.spreads, 0.5), SpreadP90: spreadAt(h.spreads, 0.9),
			TimeoutFraction:   frac(h.byForm[2], h.matches),
			ExpiredFraction:   frac(h.outcomes[outExpired], h.joins),
			CancelledFraction: frac(cancelled, h.joins),
		})
	}
	slices.Sort(waits)
	slices.Sort(spreads)
	r.WaitP50, r.WaitP90, r.WaitP99 = waitAt(waits, 0.5), waitAt(waits, 0.9), waitAt(waits, 0.99)
	r.SpreadP50, r.SpreadP90 = spreadAt(spreads, 0.5), spreadAt(spreads, 0.9)
	r.MatchedFraction = frac(r.Matched, r.Joins)
	r.CancelledFraction = frac(r.Cancelled+r.Declined+r.AcceptTimeout, r.Joins)
	r.ExpiredFraction = frac(r.Expired, r.Joins)
	r.FilledFraction = frac(byForm[0], r.Matches)
	r.FallbackFraction = frac(byForm[1], r.Matches)
	r.TimeoutFraction = frac(byForm[2], r.Matches)
	r.MatchesPerHour = round(float64(r.Matches)/sc.Duration.Hours(), 1)
	return r
}

// rank is the nearest-rank percentile's index among n sorted samples.
func rank(n int, p float64) int {
	return max(int(math.Ceil(p*float64(n)))-1, 0)
}

func waitAt(sorted []int32, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[rank(len(sorted), p)]) / 1000
}

func spreadAt(sorted []float32, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return round(float64(sorted[rank(len(sorted), p)]), 2)
}

func frac(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return round(float64(n)/float64(of), 4)
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
