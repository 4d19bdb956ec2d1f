package pool

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Oldest returns up to n entries in wait order (effective enqueue time), the
// anchors of a tick.
func (p *Pool) Oldest(ctx context.Context, partition string, n int) ([]matcher.Entry, error) {
	return p.scan(ctx, partition, OldestScan(n))
}

// Watched returns up to n entries that need a look by now, soonest first,
// whatever their place in the wait order: those whose deadline has passed,
// and those with no sign of life (heartbeat, else the enqueue) for their
// queue's heartbeat timeout, as Enqueue, Requeue and Heartbeat were told it.
// Each has its Heartbeat (its Enqueue when it sent none), for the caller to
// judge which it is. It also drops, up to a bound, the members a claim left
// behind (see claim.lua).
func (p *Pool) Watched(ctx context.Context, partition string, now time.Time, n int) ([]matcher.Entry, error) {
	return p.scan(ctx, partition, WatchScan(now, n))
}

// Window returns up to n entries with lo <= skill <= hi in ascending skill.
// Infinite bounds are allowed (an unbounded window near the deadline).
func (p *Pool) Window(ctx context.Context, partition string, lo, hi float64, n int) ([]matcher.Entry, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return nil, fmt.Errorf("scan window of %s: NaN bound", partition)
	}
	return p.scan(ctx, partition, Scan{mode: "window", n: n, params: []string{score(lo), score(hi)}})
}

// Nearest returns the n entries closest in skill to skill, sorted by distance,
// ties by enqueue time (then ticket id, so the order is stable). The script
// reads n entries on each side, which always contain the n closest overall,
// and returns only those (with any tied with the n-th). Among many entries of
// exactly equal skill at the boundary, which of them are candidates is
// decided by Redis's member order, not by wait order (NearestToScan reads
// those next to an anchor instead).
func (p *Pool) Nearest(ctx context.Context, partition string, skill float64, n int) ([]matcher.Entry, error) {
	if math.IsNaN(skill) || math.IsInf(skill, 0) {
		return nil, fmt.Errorf("scan nearest of %s: skill %v not finite", partition, skill)
	}
	return p.scan(ctx, partition, NearestScan(skill, n))
}

// scan runs one scan by itself (EVALSHA, falling back to EVAL when Redis
// lost the script).
func (p *Pool) scan(ctx context.Context, partition string, s Scan) ([]matcher.Entry, error) {
	return scanOne(ctx, p.ScanMany, partition, s)
}

// parseScanned reads a scan's reply: members, and for a "watch" scan
// member, heartbeat pairs.
func parseScanned(vals []any, mode string) ([]matcher.Entry, error) {
	step := 1
	if mode == "watch" {
		step = 2
	}
	if len(vals)%step != 0 {
		return nil, fmt.Errorf("reply of %d values is not pairs", len(vals))
	}
	out := make([]matcher.Entry, 0, len(vals)/step)
	for i := 0; i < len(vals); i += step {
		m := str(vals[i])
		e, err := parseMember(m)
		if err != nil {
			// A bare ticket id, left by a layout without the fields: the
			// caller restores it from the record.
			if strings.IndexByte(m, memberSep) >= 0 || m == "" {
				return nil, err
			}
			e = matcher.Entry{TicketID: m}
		}
		if step == 2 {
			if e.Heartbeat, err = parseMs(str(vals[i+1])); err != nil {
				return nil, fmt.Errorf("ticket %s: heartbeat: %w", e.TicketID, err)
			}
			if e.Heartbeat.IsZero() {
				e.Heartbeat = e.Enqueue
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// parseMs reads unix milliseconds; "" and "0" are the zero time. Scores come
// back as doubles, possibly in exponent form, hence ParseFloat.
func parseMs(s string) (time.Time, error) {
	if s == "" || s == "0" {
		return time.Time{}, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(math.Round(f))), nil
}
