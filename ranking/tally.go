package ranking

import "time"

// Tally is one item's metrics in one hour bucket as a count made elsewhere
// gives them whole (Record.SetHours): the matchmaking boards' counts from
// matchgate's own record. First is, per metric of Metrics, the instant of
// its first event in the hour (a tie's order).
type Tally struct {
	Item    string
	Hour    time.Time // UTC, on the hour
	Metrics map[string]float64
	First   map[string]time.Time
}
