package client

import (
	"math/rand/v2"
	"time"
)

// Backoff is the wait before reconnect attempt (0 for the first retry):
// "full jitter", a uniformly random duration in [0, min(cap, base·2^attempt)),
// as web/matchgate.js's backoffDelay. A fleet of clients dropped by one node
// restart spreads its reconnects over the window instead of arriving
// together. random returns a number in [0, 1).
func Backoff(attempt int, base, cap time.Duration, random func() float64) time.Duration {
	if base <= 0 || cap <= 0 {
		return 0
	}
	ceiling := cap
	if attempt < 0 {
		attempt = 0
	}
	// base·2^attempt overflows past 62 doublings; cap holds long before.
	if attempt < 62 && base <= cap>>attempt {
		ceiling = base << attempt
	}
	r := random()
	if r < 0 || r >= 1 {
		r = 0
	}
	return time.Duration(r * float64(ceiling))
}

// Clock is the time the client waits on: the backoff, and when an
// admission token's life ends. Tests pass a clock they move by hand.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func defaultRandom() float64 { return rand.Float64() }
