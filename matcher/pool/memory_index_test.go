package pool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// TestOrderedIsTheSortedOrder checks the index against a sort of its set
// after each of thousands of random adds and removes, with many equal
// scores: the order both ways, seek, find and around.
func TestOrderedIsTheSortedOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	o := newOrdered[float64]()
	set := map[string]float64{}
	for step := range 4000 {
		m := "m" + strconv.Itoa(rng.IntN(300))
		if sk, in := set[m]; in && rng.IntN(2) == 0 {
			o.remove(sk, m)
			delete(set, m)
		} else if !in {
			sk := float64(rng.IntN(40)) / 4
			o.insert(sk, m, nil)
			set[m] = sk
		}
		if step%7 != 0 {
			continue
		}
		want := byScore(set)
		var fwd, back []string
		for x := o.first(); x != nil; x = x.next[0] {
			fwd = append(fwd, x.m)
		}
		for x := o.tail; x != nil; x = x.prev {
			back = append(back, x.m)
		}
		slices.Reverse(back)
		if !slices.Equal(fwd, want) || !slices.Equal(back, want) || o.n != len(want) {
			t.Fatalf("step %d: order %v, backwards %v, n %d; want %v", step, fwd, back, o.n, want)
		}
		sk := float64(rng.IntN(44)-2) / 4
		n := rng.IntN(6)
		for _, after := range []bool{false, true} {
			c, _ := slices.BinarySearchFunc(want, sk, func(m string, sk float64) int {
				if set[m] < sk || (after && set[m] == sk) {
					return -1
				}
				return 1
			})
			at := o.seek(sk, after)
			if (c == len(want)) != (at == nil) || (at != nil && at.m != want[c]) {
				t.Fatalf("step %d: seek(%v, %v) = %v, want position %d of %v", step, sk, after, at, c, want)
			}
			lo, hi := max(c-n, 0), min(c+n, len(want))
			var wantAround []any
			if lo < hi {
				wantAround = anys(want[lo:hi])
			}
			if got := o.around(at, n); !reflect.DeepEqual(got, wantAround) {
				t.Fatalf("step %d: around position %d by %d = %v, want %v", step, c, n, got, wantAround)
			}
		}
		if len(want) > 0 {
			m := want[rng.IntN(len(want))]
			if x := o.find(set[m], m); x == nil || x.m != m {
				t.Fatalf("step %d: find %s = %v", step, m, x)
			}
			if x := o.find(set[m]+0.1, m); x != nil {
				t.Fatalf("step %d: find %s at another score = %v", step, m, x.m)
			}
		}
	}
}

// TestMemoryScansAsSorted runs thousands of random operations on a memory
// pool and, after each, compares every kind of scan with the same scan
// done by sorting the partition's sets, as the pool did before it kept
// them in order.
func TestMemoryScansAsSorted(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.UnixMilli(1_700_000_000_000)
	clock := func() time.Time { return now }
	p := NewMemory(clock, time.Minute)
	const part, over = "q:eu/s0", "q:eu/ov"
	var known []matcher.Entry
	entry := func(i int) matcher.Entry {
		return matcher.Entry{
			TicketID: fmt.Sprintf("t%03d", i), UserID: fmt.Sprintf("u%03d", i),
			Skill:   float64(1000 + rng.IntN(20)*25),
			Enqueue: now.Add(-time.Duration(rng.IntN(30)) * time.Second), Deadline: now.Add(time.Duration(1+rng.IntN(60)) * time.Second),
		}
	}
	pick := func() (matcher.Entry, bool) {
		if len(known) == 0 {
			return matcher.Entry{}, false
		}
		return known[rng.IntN(len(known))], true
	}
	room := new(Room)
	for step := range 1000 {
		now = now.Add(time.Duration(rng.IntN(500)) * time.Millisecond)
		switch op := rng.IntN(10); {
		case op < 4:
			e := entry(rng.IntN(400))
			if ok, err := p.Enqueue(ctx, part, e, 2*time.Minute, 5*time.Second); err != nil {
				t.Fatal(err)
			} else if ok {
				known = append(known, e)
			}
		case op == 4:
			if e, ok := pick(); ok {
				if _, err := p.Claim(ctx, part, 0, fmt.Sprintf("m%d", step), []matcher.Entry{e}); err != nil {
					t.Fatal(err)
				}
			}
		case op == 5:
			if e, ok := pick(); ok {
				if _, err := p.RemoveEntry(ctx, []string{part, over}, e); err != nil {
					t.Fatal(err)
				}
			}
		case op == 6:
			if e, ok := pick(); ok {
				if _, err := p.Heartbeat(ctx, part, e.TicketID, now, 5*time.Second); err != nil {
					t.Fatal(err)
				}
			}
		case op == 7:
			if e, ok := pick(); ok {
				e.Skill += 25 // requeued with another member
				if _, err := p.Requeue(ctx, part, []matcher.Entry{e}, 2*time.Minute, now, 5*time.Second); err != nil {
					t.Fatal(err)
				}
			}
		case op == 8:
			if _, err := p.Promote(ctx, part, over, now.Add(-10*time.Second), rng.IntN(4)); err != nil {
				t.Fatal(err)
			}
		default:
			if _, err := p.Promote(ctx, over, part, now, rng.IntN(3)); err != nil {
				t.Fatal(err)
			}
		}
		for _, prt := range []string{part, over} {
			var near, wantNear [][]matcher.Entry
			n := 1 + rng.IntN(8)
			sk := float64(975 + rng.IntN(22)*25)
			anchor, _ := pick()
			if anchor.TicketID == "" {
				anchor = entry(0)
			}
			lo := float64(975 + rng.IntN(22)*25)
			mk := func(near *[][]matcher.Entry) []Scan {
				return []Scan{
					OldestScan(n), WatchScan(now, n), NearestScan(sk, n), NearestToScan(anchor, n),
					{mode: "window", n: n, params: []string{score(lo), score(lo + 100)}},
					AnchorsScan(n, 1+rng.IntN(4), near),
				}
			}
			seed := rng.Uint64()
			rng = rand.New(rand.NewPCG(seed, 0))
			scans := mk(&near)
			rng = rand.New(rand.NewPCG(seed, 0))
			wantScans := mk(&wantNear)
			got, err := p.ScanMany(ctx, prt, scans)
			if err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			want, err := p.sortedScan(prt, wantScans)
			p.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(near, wantNear) {
				t.Fatalf("step %d, %s: scans\n%v\nnear %v\nwant\n%v\nnear %v", step, prt, got, near, want, wantNear)
			}
			// The same scans in the room kept across steps read the same,
			// each anchor's list capped at its length.
			var roomNear [][]matcher.Entry
			rng = rand.New(rand.NewPCG(seed, 0))
			roomScans := mk(&roomNear)
			roomScans[len(roomScans)-1] = roomScans[len(roomScans)-1].In(room)
			got, err = p.ScanMany(ctx, prt, roomScans)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(roomNear, wantNear) {
				t.Fatalf("step %d, %s: scans in a room\n%v\nnear %v\nwant\n%v\nnear %v", step, prt, got, roomNear, want, wantNear)
			}
			for i, l := range roomNear {
				if cap(l) != len(l) {
					t.Fatalf("step %d, %s: near list %d of %d entries has room for %d", step, prt, i, len(l), cap(l))
				}
			}
			members, err := p.Members(ctx, prt)
			if err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			pool, _, _ := p.part(prt).sets()
			wantMembers, err := parsed(byScore(pool))
			p.mu.Unlock()
			if err != nil || !reflect.DeepEqual(members, wantMembers) {
				t.Fatalf("step %d, %s: members %v, want %v (%v)", step, prt, members, wantMembers, err)
			}
		}
	}
}

// sets are the three sets of pt as maps, member to score.
func (pt *memPart) sets() (pool map[string]float64, enq, watch map[string]int64) {
	pool, enq, watch = map[string]float64{}, map[string]int64{}, map[string]int64{}
	for m, mm := range pt.mems {
		pool[m], enq[m] = mm.skill, mm.enq
		if mm.watched {
			watch[m] = mm.watch
		}
	}
	return pool, enq, watch
}

// sortedScan is scanMany as it was, sorting the sets on each call: what
// the scans are checked against.
func (p *Memory) sortedScan(partition string, scans []Scan) (_ [][]matcher.Entry, err error) {
	for _, s := range scans {
		if s.near != nil {
			*s.near = nil
		}
	}
	pt, tg := p.part(partition), p.tag(partition)
	pool, enq, watch := pt.sets()
	var bySkill []string // the pool in skill order, once per call
	rank := func() map[string]int {
		r := make(map[string]int, len(bySkill))
		for i, m := range bySkill {
			r[m] = i
		}
		return r
	}
	var ranks map[string]int
	skillOrder := func() {
		if bySkill == nil {
			bySkill = byScore(pool)
			ranks = rank()
		}
	}
	around := func(n, c int) []any {
		lo, hi := max(c-n, 0), min(c+n, len(bySkill))
		if lo >= hi {
			return nil
		}
		return anys(bySkill[lo:hi])
	}
	out := make([][]matcher.Entry, len(scans))
	for i, s := range scans {
		if s.n <= 0 {
			continue
		}
		switch s.mode {
		case "oldest", "anchors":
			ms := byScore(enq)
			ms = ms[:min(s.n, len(ms))]
			if out[i], err = parsed(ms); err != nil {
				return nil, err
			}
			if s.mode == "anchors" && len(ms) == s.n {
				skillOrder()
				near := make([][]matcher.Entry, len(ms))
				for j, m := range ms {
					near[j] = []matcher.Entry{}
					if r, in := ranks[m]; in {
						if near[j], err = closestMembers(around(s.limit, r+1), out[i][j].Skill, s.limit); err != nil {
							return nil, err
						}
					}
				}
				*s.near = near
			}
		case "watch":
			now, err := strconv.ParseInt(s.params[0], 10, 64)
			if err != nil {
				return nil, err
			}
			var es []matcher.Entry
			for _, m := range byScore(watch) {
				if watch[m] > now || len(es) == s.n {
					break
				}
				e, err := parseMember(m)
				if err != nil {
					return nil, err
				}
				if h := tg.tickets[e.TicketID]; h != nil && h.m == m && p.clock().Before(h.until) {
					e.Heartbeat = timeOf(h.hb)
				} else {
					e = matcher.Entry{TicketID: e.TicketID}
				}
				if e.Heartbeat.IsZero() {
					e.Heartbeat = e.Enqueue
				}
				es = append(es, e)
			}
			out[i] = es
		case "window":
			lo, _ := strconv.ParseFloat(s.params[0], 64)
			hi, _ := strconv.ParseFloat(s.params[1], 64)
			skillOrder()
			es := []matcher.Entry{}
			for _, m := range bySkill {
				if sk := pool[m]; sk >= lo && sk <= hi && len(es) < s.n {
					e, err := parseMember(m)
					if err != nil {
						return nil, err
					}
					es = append(es, e)
				}
			}
			out[i] = es
		case "nearest":
			skillOrder()
			c := -1
			if len(s.params) > 1 && s.params[1] != "" {
				if r, in := ranks[s.params[1]]; in {
					c = r + 1
				}
			}
			if c < 0 {
				c, _ = slices.BinarySearchFunc(bySkill, s.skill, func(m string, sk float64) int {
					if pool[m] <= sk {
						return -1
					}
					return 1
				})
			}
			if out[i], err = closestMembers(around(s.n, c), s.skill, s.n); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("scan: unknown mode %s", s.mode)
		}
	}
	return out, nil
}

// TestMemoryDropsEndedHashes: a claimed ticket's hash, never read again,
// goes once its mark has ended, at the next write of a hash.
func TestMemoryDropsEndedHashes(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	p := NewMemory(func() time.Time { return now }, time.Second)
	const part = "q:eu"
	for i := range 50 {
		e := matcher.Entry{TicketID: fmt.Sprintf("t%d", i), UserID: fmt.Sprintf("u%d", i), Skill: 1000, Enqueue: now, Deadline: now.Add(time.Minute)}
		if _, err := p.Enqueue(ctx, part, e, time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Claim(ctx, part, 0, fmt.Sprintf("m%d", i), []matcher.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Second)
	late := matcher.Entry{TicketID: "late", UserID: "late", Skill: 1000, Enqueue: now, Deadline: now.Add(time.Minute)}
	if _, err := p.Enqueue(ctx, part, late, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	n := len(p.tag(part).tickets)
	p.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d hashes kept, want the late ticket's alone", n)
	}
}

// TestMemoryStatsNewestFirst: past twice the cap, the newest StatsCap
// outcomes and matches, newest first.
func TestMemoryStatsNewestFirst(t *testing.T) {
	ctx := context.Background()
	p := NewMemory(nil, 0)
	t0 := time.UnixMilli(1_700_000_000_000)
	const total = 2*StatsCap + 123
	for i := range total {
		at := t0.Add(time.Duration(i) * time.Second)
		if err := p.RecordOutcomes(ctx, "q:eu", []time.Time{at}, []Outcome{{At: at, Wait: time.Duration(i) * time.Millisecond}}); err != nil {
			t.Fatal(err)
		}
	}
	outs, ms, err := p.Stats(ctx, "q:eu")
	if err != nil || len(outs) != StatsCap || len(ms) != StatsCap {
		t.Fatalf("%d outcomes and %d matches (%v), want %d of each", len(outs), len(ms), err, StatsCap)
	}
	for i := range StatsCap {
		want := t0.Add(time.Duration(total-1-i) * time.Second)
		if !outs[i].At.Equal(want) || !ms[i].Equal(want) || outs[i].Wait != time.Duration(total-1-i)*time.Millisecond {
			t.Fatalf("entry %d: outcome %v, match %v; want at %v", i, outs[i], ms[i], want)
		}
	}
}

// The ends come out soonest first, however they went in.
func TestEndHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 0))
	base := time.UnixMilli(1_700_000_000_000)
	var h endHeap
	var want []time.Time
	for range 2000 {
		if rng.IntN(3) == 0 && len(h) > 0 {
			got := h.pop().until
			if got != want[0] {
				t.Fatalf("popped %v, want %v", got, want[0])
			}
			want = want[1:]
			continue
		}
		at := base.Add(time.Duration(rng.IntN(500)) * time.Millisecond)
		h.push(memEnd{until: at})
		i, _ := slices.BinarySearchFunc(want, at, func(a, b time.Time) int { return a.Compare(b) })
		want = slices.Insert(want, i, at)
	}
	for len(h) > 0 {
		if got := h.pop().until; got != want[0] {
			t.Fatalf("popped %v, want %v", got, want[0])
		}
		want = want[1:]
	}
}

// An endQueue gives each end once, when it is due, whatever the order
// they went in: in order as one TTL on a steady clock writes them, in
// interleaved runs as several TTLs do, or at random (the heap's).
func TestEndQueueDue(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 0))
	base := time.UnixMilli(1_700_000_000_000)
	var q endQueue
	left := map[string]time.Time{}
	now := base
	for i := range 20000 {
		if rng.IntN(4) == 0 {
			now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
			q.due(now, func(e memEnd) {
				at, ok := left[e.id]
				if !ok || at.After(now) {
					t.Fatalf("took %s (%v, live %v) at %v", e.id, at, ok, now)
				}
				delete(left, e.id)
			})
			for id, at := range left {
				if !at.After(now) {
					t.Fatalf("%s due at %v left at %v", id, at, now)
				}
			}
			continue
		}
		var at time.Time
		switch rng.IntN(6) {
		case 0:
			at = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		case 1, 2:
			at = now.Add(time.Minute)
		default:
			at = now.Add(10 * time.Minute)
		}
		id := strconv.Itoa(i)
		left[id] = at
		q.push(memEnd{until: at, id: id})
	}
	q.due(now.Add(time.Hour), func(e memEnd) { delete(left, e.id) })
	if len(left) > 0 {
		t.Fatalf("%d ends never taken", len(left))
	}
}
