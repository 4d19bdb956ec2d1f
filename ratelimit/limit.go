package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit allows N events per Per on average, at most Burst of them at once.
// The rate and the burst are apart so that a limit can be loose over a
// minute yet refuse a flood within a second. Burst 0 means N. The zero
// Limit, or one with N or Per ≤ 0, is off: everything is allowed.
type Limit struct {
	N     int
	Per   time.Duration
	Burst int
}

// Off reports whether the limit allows everything.
func (l Limit) Off() bool { return l.N <= 0 || l.Per <= 0 }

// BurstOrN is the most events allowed at once: Burst, or N when Burst is 0.
func (l Limit) BurstOrN() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.N
}

// Interval is the time one event's budget takes to come back: Per/N.
func (l Limit) Interval() time.Duration {
	if l.Off() {
		return 0
	}
	return l.Per / time.Duration(l.N)
}

// String renders the limit as ParseLimit reads it: "20/1m0s", "10/10s:5"
// (a burst other than N) or "off".
func (l Limit) String() string {
	if l.Off() {
		return "off"
	}
	s := strconv.Itoa(l.N) + "/" + l.Per.String()
	if l.Burst > 0 && l.Burst != l.N {
		s += ":" + strconv.Itoa(l.Burst)
	}
	return s
}

// maxLimitN bounds N so that Per/N stays at least a microsecond and every
// number the scripts compute stays exact in a double.
const maxLimitN = 1_000_000

// ParseLimit reads "N/duration" (e.g. "30/1m": burst N), "N/duration:B"
// (e.g. "10/10s:5": one a second on average, at most 5 at once) or "off"
// (also "0" and the empty string).
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" || s == "0" {
		return Limit{}, nil
	}
	rate, bs, hasBurst := strings.Cut(s, ":")
	burst := 0
	if hasBurst {
		b, err := strconv.Atoi(strings.TrimSpace(bs))
		if err != nil || b < 1 || b > maxLimitN {
			return Limit{}, fmt.Errorf("limit %q: the burst must be an integer in 1..%d", s, maxLimitN)
		}
		burst = b
	}
	ns, per, ok := strings.Cut(rate, "/")
	if !ok {
		return Limit{}, fmt.Errorf("limit %q: want N/duration[:burst] (e.g. 10/10s:5) or off", s)
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
	if burst == n {
		burst = 0 // the default, so that String round-trips
	}
	l := Limit{N: n, Per: d, Burst: burst}
	if err := l.Validate(); err != nil {
		return Limit{}, err
	}
	return l, nil
}

// Validate checks a limit that is not off: Per/N must be at least a
// microsecond, and Per and the time a whole burst takes to come back
// (Per/N × Burst) at most a day.
func (l Limit) Validate() error {
	if l.Off() {
		return nil
	}
	if l.N > maxLimitN || l.Burst > maxLimitN {
		return fmt.Errorf("limit %s: N and the burst must be at most %d", l, maxLimitN)
	}
	if l.Burst < 0 {
		return fmt.Errorf("limit %s: the burst must not be negative", l)
	}
	if l.Per > 24*time.Hour {
		return fmt.Errorf("limit %s: the period must be at most 24h", l)
	}
	if l.Interval()*time.Duration(l.BurstOrN()) > 24*time.Hour {
		return fmt.Errorf("limit %s: a whole burst must come back within 24h", l)
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
