package ratelimit

import "time"

// Bucket is a local token bucket: Rate tokens per second, at most Burst
// saved up. It is not safe for concurrent use; one socket's reader owns it.
type Bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket for lim (N per Per, at most its burst
// at once). An off
// limit gives a bucket that allows everything.
func NewBucket(lim Limit, now time.Time) *Bucket {
	if lim.Off() {
		return &Bucket{}
	}
	return &Bucket{
		rate:   float64(lim.N) / lim.Per.Seconds(),
		burst:  float64(lim.BurstOrN()),
		tokens: float64(lim.BurstOrN()),
		last:   now,
	}
}

// Allow takes a token if there is one.
func (b *Bucket) Allow(now time.Time) bool {
	if b.rate == 0 {
		return true
	}
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}
