package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/redis/go-redis/v9"
)

// A matching pass is a chain of round trips; on a busy machine each costs
// far more than the work it carries. The batch forms below put the reads of
// a pass, and its claims, into one pipeline each: one round trip however
// many anchors or groups.

// Scan is one read of a ScanMany.
type Scan struct {
	mode   string
	n      int
	params []string
	skill  float64 // nearest: the reads are ordered by distance to it
	// anchors: where the candidates go, and how many for each anchor;
	// room, when set, the storage to write them into (see In).
	near  *[][]matcher.Entry
	limit int
	room  *Room
}

// Room is storage a caller lends its anchors scans for the anchors and
// candidates they read (see Scan.In): an engine reads them pass after
// pass, and a list allocated for each anchor of each pass was most of what
// the memory pool's scans allocated.
type Room struct {
	anchors []matcher.Entry
	lists   [][]matcher.Entry
	entries []matcher.Entry
}

// In has an anchors scan write the anchors it reads and their candidates
// into room's storage, grown as needed, rather than into storage of their
// own: they then hold only until room is lent to another scan, and the
// caller must keep none of them past that (copies of entries are its
// own). One room is for one caller at a time. A pool may ignore it: the
// memory pool uses it, the Redis pool parses its reply into new entries
// whatever.
func (s Scan) In(room *Room) Scan {
	s.room = room
	return s
}

// OldestScan reads as Oldest does.
func OldestScan(n int) Scan { return Scan{mode: "oldest", n: n} }

// WatchScan reads as Watched does.
func WatchScan(now time.Time, n int) Scan {
	return Scan{mode: "watch", n: n, params: []string{msTime(now)}}
}

// AnchorsScan reads as OldestScan(n) does and, in the same call, the
// candidates of each anchor: (*near)[i] is what NearestToScan(anchors[i],
// limit) would read. A matching pass then reads its anchors and their
// candidates in one round trip instead of two. When fewer than n are read
// (the whole pool), *near is nil: the caller picks among the anchors; and
// when the call fails.
func AnchorsScan(n, limit int, near *[][]matcher.Entry) Scan {
	limit = max(limit, 1)
	return Scan{mode: "anchors", n: n, params: []string{strconv.Itoa(limit)}, near: near, limit: limit}
}

// NearestScan reads as Nearest does.
func NearestScan(skill float64, n int) Scan {
	return Scan{mode: "nearest", n: n, params: []string{score(skill)}, skill: skill}
}

// NearestToScan reads the n entries closest in skill to anchor, as
// NearestScan(anchor.Skill, n) does, but centred on the anchor's own place
// in the pool: among many entries of the anchor's exact skill it reads those
// next to the anchor, where NearestScan reads the same n for every anchor of
// that skill (a pass then formed a few matches out of a crowd of equal
// skills). An anchor no longer in the pool, or another pool's, reads as
// NearestScan.
func NearestToScan(anchor matcher.Entry, n int) Scan {
	own := ""
	if checkEntry(anchor) == nil {
		own = member(anchor)
	}
	return Scan{mode: "nearest", n: n, params: []string{score(anchor.Skill), own}, skill: anchor.Skill}
}

// ScanMany runs every scan of one partition in one round trip; out[i] is
// what scans[i] read.
func (p *Pool) ScanMany(ctx context.Context, partition string, scans []Scan) (out [][]matcher.Entry, err error) {
	defer wrap(&err, "scan %s", partition)
	if err := checkScans(partition, scans); err != nil || len(scans) == 0 {
		return nil, err
	}
	cmds := p.pipelined(ctx, 1, func(pipe redis.Pipeliner, _ int) *redis.Cmd {
		return scanCall(ctx, pipe, p.scanKeys(partition), scans, p.now())
	})
	return scanResults(cmds[0], scans)
}

func (p *Pool) scanKeys(partition string) []string {
	return append(p.setKeys(partition), p.ticketKey(partition, ""))
}

// scanCall queues scans as one call of scan.lua on pipe; a watch scan
// judges the hashes it reads by clock, the pool's now.
func scanCall(ctx context.Context, pipe redis.Pipeliner, keys []string, scans []Scan, clock time.Time) *redis.Cmd {
	args := make([]any, 0, 4*len(scans))
	for _, s := range scans {
		p1, p2 := "", ""
		if len(s.params) > 0 {
			p1 = s.params[0]
		}
		if len(s.params) > 1 {
			p2 = s.params[1]
		}
		if s.mode == "watch" {
			p2 = msTime(clock)
		}
		args = append(args, s.mode, strconv.Itoa(max(s.n, 1)), p1, p2)
	}
	return scanScript.EvalSha(ctx, pipe, keys, args...)
}

// scanResults reads the reply of scanCall: out[i] is what scans[i] read.
func scanResults(cmd *redis.Cmd, scans []Scan) (_ [][]matcher.Entry, err error) {
	// Candidates come with their anchors or not at all.
	drop := func() {
		for _, s := range scans {
			if s.near != nil {
				*s.near = nil
			}
		}
	}
	drop()
	defer func() {
		if err != nil {
			drop()
		}
	}()
	vals, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(vals) != len(scans) {
		return nil, fmt.Errorf("%d replies for %d scans", len(vals), len(scans))
	}
	out := make([][]matcher.Entry, len(scans))
	for i, s := range scans {
		if s.n <= 0 {
			continue
		}
		rows, _ := vals[i].([]any)
		if s.mode == "anchors" {
			if len(rows) == 0 {
				return nil, fmt.Errorf("anchors: empty reply")
			}
			anchors, _ := rows[0].([]any)
			es, err := parseScanned(anchors, s.mode)
			if err != nil {
				return nil, fmt.Errorf("anchors: %w", err)
			}
			out[i] = es
			if len(rows) == 1 {
				continue
			}
			if len(rows) != 1+len(es) {
				return nil, fmt.Errorf("anchors: %d candidate lists for %d anchors", len(rows)-1, len(es))
			}
			near := make([][]matcher.Entry, len(es))
			for j, a := range es {
				cands, _ := rows[1+j].([]any)
				if near[j], err = closestMembers(cands, a.Skill, s.limit); err != nil {
					return nil, fmt.Errorf("anchors: near %s: %w", a.TicketID, err)
				}
			}
			*s.near = near
			continue
		}
		var es []matcher.Entry
		if s.mode == "nearest" {
			es, err = closestMembers(rows, s.skill, s.n)
		} else {
			es, err = parseScanned(rows, s.mode)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.mode, err)
		}
		out[i] = es
	}
	return out, nil
}

// closestMembers is Closest over the entries of members (a "nearest" read:
// the n on each side of skill), parsing in full only those that can be
// among the n closest: by their skills, the n-th closest distance and any
// tied with it. A bare ticket id has no skill and is not a candidate.
func closestMembers(members []any, skill float64, n int) ([]matcher.Entry, error) {
	if n <= 0 || len(members) == 0 {
		return []matcher.Entry{}, nil
	}
	dist := make([]float64, len(members))
	for i, v := range members {
		s, ok, err := memberSkill(str(v))
		switch {
		case err != nil:
			return nil, err
		case !ok:
			dist[i] = math.Inf(1)
		default:
			dist[i] = math.Abs(s - skill)
		}
	}
	sorted := slices.Clone(dist)
	slices.Sort(sorted)
	cut := sorted[min(n, len(sorted))-1]
	es := make([]matcher.Entry, 0, n+1)
	for i, v := range members {
		if dist[i] > cut || math.IsInf(dist[i], 1) {
			continue
		}
		e, err := parseMember(str(v))
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return matcher.Closest(es, skill, n), nil
}

// ClaimRequest is one group of a ClaimMany: the entries as read from the
// pool (see Claim).
type ClaimRequest struct {
	MatchID string
	Entries []matcher.Entry
}

// Claimed is the outcome of one claim of a ClaimMany. Err set means the
// outcome is unknown (the command may or may not have run), ErrStaleFence
// that the fence refused it.
type Claimed struct {
	ClaimResult
	Err error
}

// ClaimMany runs claims of one partition, each as Claim does (all or
// nothing, fenced), in one round trip. The claims are independent: one
// failing takes nothing from the others. The scans of then run in the same
// round trip after the claims, so they see the pool without the players
// claimed (a pass reading its next anchors); a scan that failed reads as
// nothing.
func (p *Pool) ClaimMany(ctx context.Context, partition string, fence int64, reqs []ClaimRequest, then ...Scan) ([]Claimed, [][]matcher.Entry, error) {
	if err := checkPartition(partition); err != nil {
		return nil, nil, fmt.Errorf("claim in %s: %w", partition, err)
	}
	if fence < 0 {
		return nil, nil, fmt.Errorf("claim in %s: negative fence token %d", partition, fence)
	}
	var ckeys []string
	var cargs []any
	if len(reqs) > 0 {
		var err error
		if ckeys, cargs, err = p.claimCall(partition, fence, reqs); err != nil {
			return nil, nil, fmt.Errorf("claim in %s: %w", partition, err)
		}
	}
	// The claims are one call, the scans another after it.
	var calls []func(pipe redis.Pipeliner) *redis.Cmd
	if len(reqs) > 0 {
		calls = append(calls, func(pipe redis.Pipeliner) *redis.Cmd {
			return claimScript.EvalSha(ctx, pipe, ckeys, cargs...)
		})
	}
	if len(then) > 0 {
		keys := p.scanKeys(partition)
		clock := p.now()
		calls = append(calls, func(pipe redis.Pipeliner) *redis.Cmd { return scanCall(ctx, pipe, keys, then, clock) })
	}
	cmds := p.pipelined(ctx, len(calls), func(pipe redis.Pipeliner, i int) *redis.Cmd { return calls[i](pipe) })
	out := make([]Claimed, len(reqs))
	if len(reqs) > 0 {
		rs, err := claimResults(cmds[0], len(reqs))
		for i, r := range reqs {
			switch {
			case errors.Is(err, ErrStaleFence):
				out[i].Err = ErrStaleFence
			case err != nil:
				out[i].Err = fmt.Errorf("claim %s in %s: %w", r.MatchID, partition, err)
			default:
				out[i].ClaimResult = rs[i]
			}
		}
		cmds = cmds[1:]
	}
	// A failed read reads as nothing.
	read := make([][]matcher.Entry, len(then))
	if len(then) > 0 {
		if got, err := scanResults(cmds[0], then); err == nil {
			read = got
		}
	}
	return out, read, nil
}

// pipelined sends n script calls in one pipeline and returns their
// commands, each holding its own reply or error. A call refused with
// NOSCRIPT (Redis restarted, or its scripts flushed) never ran: the scripts
// are loaded and those calls alone sent again, once.
func (p *Pool) pipelined(ctx context.Context, n int, call func(pipe redis.Pipeliner, i int) *redis.Cmd) []*redis.Cmd {
	cmds := make([]*redis.Cmd, n)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	for attempt := 0; attempt < 2 && len(idx) > 0; attempt++ {
		pipe := p.rdb.Pipeline()
		for _, i := range idx {
			cmds[i] = call(pipe, i)
		}
		if _, err := pipe.Exec(ctx); err == nil {
			break
		}
		var again []int
		for _, i := range idx {
			if e := cmds[i].Err(); e != nil && strings.HasPrefix(e.Error(), "NOSCRIPT") {
				again = append(again, i)
			}
		}
		if len(again) == 0 || p.Load(ctx) != nil {
			break
		}
		idx = again
	}
	return cmds
}
