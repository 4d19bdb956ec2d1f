package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit allows N events per Per, at most N of them at once (the burst is N).
// The zero Limit, or one with N or Per ≤ 0, is off: everything is allowed.
type Limit struct {
	N   int
	Per time.Duration
}

// Off reports whether the limit allows everything.
func (l Limit) Off() bool { return l.N <= 0 || l.Per <= 0 }

// Interval is the time one event's budget takes to come back: Per/N.
func (l Limit) Interval() time.Duration {
	if l.Off() {
		return 0
	}
	return l.Per / time.Duration(l.N)
}

// String renders the limit as ParseLimit reads it: "20/1m0s" or "off".
func (l Limit) String() string {
	if l.Off() {
		return "off"
	}
	return strconv.Itoa(l.N) + "/" + l.Per.String()
}

// maxLimitN bounds N so that Per/N stays at least a microsecond and every
// number the scripts compute stays exact in a double.
const maxLimitN = 1_000_000

// ParseLimit reads "N/duration" (e.g. "30/1m", "10/1s") or "off" (also "0"
// and the empty string).
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" || s == "0" {
		return Limit{}, nil
	}
	ns, per, ok := strings.Cut(s, "/")
	if !ok {
		return Limit{}, fmt.Errorf("limit %q: want N/duration (e.g. 30/1m) or off", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(ns))
	if err != nil || n < 1 || n > maxLimitN {
		return Limit{}, fmt.Errorf("limit %q: N must be an integer in 1..%d", s, maxLimitN)
	}
	d, err := time.ParseDuration(strings.TrimSpace(per))
	if err != nil {
		return Limit{}, fmt.Errorf("limit %q: %w", s, err)
	}
	if d <= 0 {
		return Limit{}, fmt.Errorf("limit %q: the period must be positive", s)
	}
	l := Limit{N: n, Per: d}
	if err := l.Validate(); err != nil {
		return Limit{}, err
	}
	return l, nil
}

// Validate checks a limit that is not off: Per/N must be at least a
// microsecond and Per at most a day.
func (l Limit) Validate() error {
	if l.Off() {
		return nil
	}
	if l.N > maxLimitN {
		return fmt.Errorf("limit %s: N must be at most %d", l, maxLimitN)
	}
	if l.Per > 24*time.Hour {
		return fmt.Errorf("limit %s: the period must be at most 24h", l)
	}
	if l.Interval() < time.Microsecond {
		return errors.New("limit " + l.String() + ": N/period must be at most one event per microsecond")
	}
	return nil
}

// Decision is the outcome of one event.
type Decision struct {
	// Allowed is whether the event fits in the limit (and was counted).
	Allowed bool
	// RetryAfter is, for a refused event, when the next one would fit.
	RetryAfter time.Duration
	// Remaining is how many more events would fit right now.
	Remaining int
}
