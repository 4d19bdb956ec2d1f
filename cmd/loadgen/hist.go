package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Histogram buckets latencies in microseconds on a log-linear scale: exact
// below 128µs, then 128 buckets per power of two (each at most 1/128 wide,
// so a percentile is within 0.8% of the true value). It is mergeable (worker
// reports are summed bucket by bucket) and safe for concurrent use.
type Histogram struct {
	mu     sync.Mutex
	counts []uint64 // by bucket index, grown on demand
	n      uint64
	sum    float64 // µs
	min    uint64  // µs
	max    uint64  // µs
}

// subBuckets is the number of buckets per power of two; values below it are
// their own bucket.
const (
	subBits    = 7
	subBuckets = 1 << subBits
)

// bucketOf returns the bucket index of v (µs).
func bucketOf(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(v) - subBits - 1 // v>>e is in [128, 255]
	return subBuckets + e*subBuckets + int(v>>uint(e)) - subBuckets
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < subBuckets {
		return uint64(i), uint64(i)
	}
	e := (i - subBuckets) / subBuckets
	m := uint64((i-subBuckets)%subBuckets + subBuckets)
	lo = m << uint(e)
	hi = lo + (uint64(1) << uint(e)) - 1
	return lo, hi
}

// Record adds one observation; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.RecordMicros(uint64(us))
}

// RecordMicros adds one observation in microseconds.
func (h *Histogram) RecordMicros(v uint64) {
	i := bucketOf(v)
	h.mu.Lock()
	if i >= len(h.counts) {
		grown := make([]uint64, i+subBuckets)
		copy(grown, h.counts)
		h.counts = grown
	}
	h.counts[i]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
	h.mu.Unlock()
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// Quantile returns the q-quantile (0 < q ≤ 1) in microseconds: the midpoint
// of the bucket holding the observation of rank ceil(q·n), clamped to the
// exact minimum and maximum. It is 0 when there is no observation.
func (h *Histogram) Quantile(q float64) float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.quantileLocked(q)
}

func (h *Histogram) quantileLocked(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	if rankOf(q, h.n) == h.n {
		return float64(h.max)
	}
	mid, ok := bucketQuantile(h.counts, h.n, q)
	if !ok {
		return float64(h.max)
	}
	return math.Max(float64(h.min), math.Min(float64(h.max), mid))
}

// rankOf is the rank, in 1..n, of the q-quantile of n observations.
func rankOf(q float64, n uint64) uint64 {
	return max(1, min(uint64(math.Ceil(q*float64(n))), n))
}

// bucketQuantile returns the midpoint (µs) of the bucket of counts that
// holds the observation of rank ceil(q·n), where n > 0 is the sum of
// counts; false when counts hold fewer than that rank.
func bucketQuantile(counts []uint64, n uint64, q float64) (float64, bool) {
	rank := rankOf(q, n)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			return float64(lo+hi) / 2, true
		}
	}
	return 0, false
}

// Counts returns a copy of the bucket counts: subtracting an earlier copy
// gives the observations made in between (the progress line's interval).
func (h *Histogram) Counts() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]uint64(nil), h.counts...)
}

// Merge adds o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || h == o {
		return
	}
	o.mu.Lock()
	counts := append([]uint64(nil), o.counts...)
	n, sum, lo, hi := o.n, o.sum, o.min, o.max
	o.mu.Unlock()
	if n == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts = addBuckets(h.counts, counts)
	if h.n == 0 || lo < h.min {
		h.min = lo
	}
	h.max = max(h.max, hi)
	h.n += n
	h.sum += sum
}

// Summary is a histogram's figures in milliseconds, as reported.
type Summary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Summary computes the reported figures.
func (h *Histogram) Summary() Summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return Summary{}
	}
	ms := func(us float64) float64 { return math.Round(us) / 1000 }
	return Summary{
		Count: h.n, Mean: ms(h.sum / float64(h.n)), Min: ms(float64(h.min)),
		P50: ms(h.quantileLocked(0.50)), P90: ms(h.quantileLocked(0.90)), P95: ms(h.quantileLocked(0.95)),
		P99: ms(h.quantileLocked(0.99)), Max: ms(float64(h.max)),
	}
}

// histJSON is the stored form: the summary for people, the sparse buckets
// for merging.
type histJSON struct {
	Summary
	SumMicros float64           `json:"sumMicros"`
	MinMicros uint64            `json:"minMicros"`
	MaxMicros uint64            `json:"maxMicros"`
	Buckets   map[string]uint64 `json:"buckets"`
}

// MarshalJSON writes the summary and the non-empty buckets.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	s := h.Summary()
	h.mu.Lock()
	defer h.mu.Unlock()
	j := histJSON{Summary: s, SumMicros: h.sum, MinMicros: h.min, MaxMicros: h.max, Buckets: map[string]uint64{}}
	for i, c := range h.counts {
		if c > 0 {
			j.Buckets[strconv.Itoa(i)] = c
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	idx := make([]int, 0, len(j.Buckets))
	for k := range j.Buckets {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i > 1<<16 {
			return fmt.Errorf("histogram bucket %q", k)
		}
		idx = append(idx, i)
	}
	sort.Ints(idx)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts, h.n = nil, 0
	if len(idx) > 0 {
		h.counts = make([]uint64, idx[len(idx)-1]+1)
	}
	for _, i := range idx {
		h.counts[i] = j.Buckets[strconv.Itoa(i)]
		h.n += h.counts[i]
	}
	h.sum, h.min, h.max = j.SumMicros, j.MinMicros, j.MaxMicros
	return nil
}

// addBuckets adds b to a bucket by bucket, growing a as needed.
func addBuckets(a, b []uint64) []uint64 {
	if len(b) > len(a) {
		a = append(a, make([]uint64, len(b)-len(a))...)
	}
	for i, c := range b {
		a[i] += c
	}
	return a
}
