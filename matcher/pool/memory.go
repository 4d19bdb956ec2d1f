package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Memory is the live pool in memory, in pure Go: the contract of the Redis
// Pool (the operations engine.Pool lists) with the same semantics as its
// scripts, for tests and runs on a virtual clock. It lives beside the Redis
// pool, as the memory ledger beside the PostgreSQL one, because both speak
// the same types (Entry, Scan, ClaimRequest…) and share their validation,
// their member encoding and their orderings, so that the two cannot drift
// apart on what an entry is.
//
// Ticket hashes and claims' marks end by the clock it is given, as the
// Redis pool's do by its WithClock; leases, offers and everything else by
// the caller's now, as the Redis pool's; an ended hash is dropped by the
// next call that writes a hash. One mutex guards it all: every call is
// atomic, as a script is. Each partition keeps its sets in order as they
// change (memory_index.go), so a scan reads only the range it returns.
type Memory struct {
	clock    func() time.Time
	claimTTL time.Duration

	mu      sync.Mutex
	parts   map[string]*memPart // by partition, sub-pools apart
	tags    map[string]*memTag  // by (queue, region): what its pools share
	cds     map[string]time.Time
	skills  map[string]memSkill
	leases  map[string]memLease
	fences  map[string]int64
	allocTo map[string]time.Time
	// near is closestAround's room for the entries it chooses among.
	near []*matcher.Entry
	// nodes is an anchors scan's room for its anchors' nodes; taken and
	// group a claim's for the members it takes and those of a group.
	nodes        []*ixNode[int64]
	taken, group []*memMember
	// ends holds when each hash written ends, so that an ended hash is
	// dropped then, as Redis expires a key, instead of staying until it is
	// next read: most are never read again.
	ends endQueue
}

// memEnd is when a hash written ends. A hash written again ends later and
// has another memEnd; the earlier one finds it still live and passes.
type memEnd struct {
	until time.Time
	tag   *memTag
	id    string
}

// endQueue holds memEnds for sweep to take those due. The ends of one
// TTL written on a clock that does not go back come in order: a few lanes,
// each in order, take them at O(1) a push and a take where a heap took
// O(log n) (most of sweep's time, over a pool of many tickets); an end
// that fits no lane goes to the heap.
type endQueue struct {
	lanes [4]endLane
	heap  endHeap
}

// endLane is a queue of memEnds in order of until: head is the next.
type endLane struct {
	q    []memEnd
	head int
}

func (l *endLane) empty() bool { return l.head == len(l.q) }

func (l *endLane) last() time.Time { return l.q[len(l.q)-1].until }

func (q *endQueue) push(e memEnd) {
	best, free := -1, -1
	for i := range q.lanes {
		l := &q.lanes[i]
		switch {
		case l.empty():
			if free < 0 {
				free = i
			}
		case !e.until.Before(l.last()) && (best < 0 || l.last().After(q.lanes[best].last())):
			best = i
		}
	}
	if best < 0 {
		best = free
	}
	if best < 0 {
		q.heap.push(e)
		return
	}
	l := &q.lanes[best]
	if l.empty() {
		l.q, l.head = l.q[:0], 0
	}
	if len(l.q) == cap(l.q) && l.head > 0 && 4*l.head >= len(l.q) {
		// Full with a quarter or more taken: room again, rather than a
		// larger copy.
		l.compact()
	}
	l.q = append(l.q, e)
}

// compact moves what is left of l to the start of its storage.
func (l *endLane) compact() {
	n := copy(l.q, l.q[l.head:])
	clear(l.q[n:])
	l.q, l.head = l.q[:n], 0
}

// due takes every end not after now, calling take with each, in no
// particular order.
func (q *endQueue) due(now time.Time, take func(memEnd)) {
	for i := range q.lanes {
		l := &q.lanes[i]
		for !l.empty() && !now.Before(l.q[l.head].until) {
			e := l.q[l.head]
			l.q[l.head] = memEnd{}
			l.head++
			take(e)
		}
		// What was taken is room again once it is half the lane.
		if l.head > 1024 && 2*l.head > len(l.q) {
			l.compact()
		}
	}
	for len(q.heap) > 0 && !now.Before(q.heap[0].until) {
		take(q.heap.pop())
	}
}

// endHeap is a min-heap of memEnds by until, as container/heap keeps
// one but without its interface: a boxed memEnd per push and pop and a
// dynamic call per comparison were most of sweep's time.
type endHeap []memEnd

func (h *endHeap) push(e memEnd) {
	*h = append(*h, e)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2
		if !q[j].until.Before(q[i].until) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

// pop removes and returns the soonest; h must not be empty.
func (h *endHeap) pop() memEnd {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && q[r].until.Before(q[j].until) {
			j = r
		}
		if !q[j].until.Before(q[i].until) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	e := q[n]
	q[n] = memEnd{}
	*h = q[:n]
	return e
}

type memPart struct {
	// mems are the partition's members, each with its scores in the three
	// sets (pool: skill, enq: effective enqueue, watch: when to look), in
	// one map where three maps took three lookups an add or a delete.
	mems   map[string]*memMember
	offers map[string]memOffer
	// The three sets in their order, kept by add, del and setWatch.
	bySkill        *ordered[float64]
	byEnq, byWatch *ordered[int64]
}

type memTag struct {
	tickets map[string]*memTicket // by ticket id
	pending map[string]int64      // match id → accept by, unix ms
	// Oldest first, cut back to the newest StatsCap once twice as many:
	// an outcome costs O(1) amortized, not a copy of the window.
	waits   []Outcome
	matches []time.Time
}

// memTicket is a ticket hash: m "" is a hash a claim created without one.
type memTicket struct {
	m, state, match, from string
	name                  string
	hb, fence             int64
	until                 time.Time
}

type memOffer struct {
	expiry int64
	m      string
	hb     int64
	home   string
}

type memSkill struct {
	skill float64
	until time.Time
}

type memLease struct {
	owner string
	token int64
	until int64 // unix ms, as internal/redislease stores it
}

// NewMemory returns an empty memory pool on clock (time.Now when nil),
// keeping a claimed ticket's mark for claimTTL (DefaultClaimTTL when <= 0).
func NewMemory(clock func() time.Time, claimTTL time.Duration) *Memory {
	if clock == nil {
		clock = time.Now
	}
	if claimTTL <= 0 {
		claimTTL = DefaultClaimTTL
	}
	return &Memory{
		clock: clock, claimTTL: claimTTL,
		parts: map[string]*memPart{}, tags: map[string]*memTag{},
		cds: map[string]time.Time{}, skills: map[string]memSkill{},
		leases: map[string]memLease{}, fences: map[string]int64{}, allocTo: map[string]time.Time{},
	}
}

func (p *Memory) part(partition string) *memPart {
	pt := p.parts[partition]
	if pt == nil {
		pt = &memPart{mems: map[string]*memMember{}, offers: map[string]memOffer{},
			bySkill: newOrdered[float64](), byEnq: newOrdered[int64](), byWatch: newOrdered[int64]()}
		p.parts[partition] = pt
	}
	return pt
}

func (p *Memory) tag(partition string) *memTag {
	tag, _ := splitPartition(partition)
	t := p.tags[tag]
	if t == nil {
		t = &memTag{tickets: map[string]*memTicket{}, pending: map[string]int64{}}
		p.tags[tag] = t
	}
	return t
}

// ending notes that the hash id of tg ends at until.
func (p *Memory) ending(tg *memTag, id string, until time.Time) {
	p.ends.push(memEnd{until: until, tag: tg, id: id})
}

// sweep drops the hashes that ended by now.
func (p *Memory) sweep() {
	now := p.clock()
	p.ends.due(now, func(e memEnd) {
		if h := e.tag.tickets[e.id]; h != nil && !now.Before(h.until) {
			delete(e.tag.tickets, e.id)
		}
	})
}

// ticket is the live hash of a ticket, nil when there is none or it expired.
func (p *Memory) ticket(partition, id string) *memTicket {
	tg := p.tag(partition)
	h := tg.tickets[id]
	if h != nil && !p.clock().Before(h.until) {
		delete(tg.tickets, id)
		return nil
	}
	return h
}

func (pt *memPart) add(m string, skill float64, enq, watch int64) {
	pt.del(m)
	mm := &memMember{skill: skill, enq: enq}
	mm.e, mm.err = parseMember(m)
	pt.mems[m] = mm
	mm.bySkill = pt.bySkill.insert(skill, m, mm)
	pt.byEnq.insert(enq, m, mm)
	pt.setWatch(m, mm, watch)
}

func (pt *memPart) del(m string) {
	if mm := pt.mems[m]; mm != nil {
		pt.drop(m, mm)
	}
}

// drop removes m, a member of pt, whose memMember is mm.
func (pt *memPart) drop(m string, mm *memMember) {
	pt.bySkill.remove(mm.skill, m)
	pt.byEnq.remove(mm.enq, m)
	if mm.watched {
		pt.byWatch.remove(mm.watch, m)
	}
	delete(pt.mems, m)
}

// has reports whether m is a member of pt.
func (pt *memPart) has(m string) bool {
	_, ok := pt.mems[m]
	return ok
}

// setWatch sets when to look at m, a member of pt; mm is m's, nil to
// look it up.
func (pt *memPart) setWatch(m string, mm *memMember, w int64) {
	if mm == nil {
		if mm = pt.mems[m]; mm == nil {
			return
		}
	}
	if mm.watched {
		if mm.watch == w {
			return
		}
		pt.byWatch.remove(mm.watch, m)
	}
	mm.watch, mm.watched = w, true
	pt.byWatch.insert(w, m, mm)
}

// memMember is a member of a partition: its scores, and the member parsed
// once when added rather than on every scan that reads it (the parse was
// most of a scan's time), with its node in the skill order.
type memMember struct {
	e          matcher.Entry
	err        error // the member does not parse: the scans that read it fail
	skill      float64
	enq, watch int64 // watch is set when watched
	watched    bool
	taken      bool // by the claim under way, which drops it
	bySkill    *ixNode[float64]
}

// nodeEntry is the entry x names, as parseMember reads its member.
func nodeEntry[S int64 | float64](x *ixNode[S]) (matcher.Entry, error) {
	if x.mm == nil {
		return parseMember(x.m)
	}
	return x.mm.e, x.mm.err
}

// byScore is the members of a set in its order: by score, then member.
func byScore[S int64 | float64](set map[string]S) []string {
	ms := make([]string, 0, len(set))
	for m := range set {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b string) int {
		if set[a] != set[b] {
			if set[a] < set[b] {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	return ms
}

func parsed(ms []string) ([]matcher.Entry, error) {
	out := make([]matcher.Entry, 0, len(ms))
	for _, m := range ms {
		e, err := parseMember(m)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func anys(ms []string) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func timeOf(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// watchMS is watchAt in whole ms, as the scripts compute it.
func watchMS(last, enq, dl int64, timeout time.Duration) int64 {
	if last == 0 {
		last = enq
	}
	if t := timeout.Milliseconds(); t > 0 && last+t < dl {
		return last + t
	}
	return dl
}

// Enqueue is Pool.Enqueue.
func (p *Memory) Enqueue(_ context.Context, partition string, e matcher.Entry, ttl, timeout time.Duration) (added bool, err error) {
	defer wrap(&err, "enqueue %s in %s", e.TicketID, partition)
	if err := checkPartition(partition); err != nil {
		return false, err
	}
	if err := checkEntry(e); err != nil {
		return false, err
	}
	if ttl < time.Millisecond {
		return false, fmt.Errorf("ttl %v below 1ms", ttl)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ticket(partition, e.TicketID) != nil {
		return false, nil
	}
	p.sweep()
	m, tg, until := member(e), p.tag(partition), p.clock().Add(ttl)
	tg.tickets[e.TicketID] = &memTicket{m: m, name: e.Name, state: "waiting", hb: msOf(e.Heartbeat), until: until}
	p.ending(tg, e.TicketID, until)
	p.part(partition).add(m, e.Skill, e.Enqueue.UnixMilli(), watchMS(msOf(e.Heartbeat), e.Enqueue.UnixMilli(), e.Deadline.UnixMilli(), timeout))
	return true, nil
}

// Claim is Pool.Claim.
func (p *Memory) Claim(ctx context.Context, partition string, fence int64, matchID string, entries []matcher.Entry) (res ClaimResult, err error) {
	defer wrap(&err, "claim %s in %s", matchID, partition)
	if err := checkPartition(partition); err != nil {
		return ClaimResult{}, err
	}
	reqs := []ClaimRequest{{MatchID: matchID, Entries: entries}}
	if err := checkClaims(fence, reqs); err != nil {
		return ClaimResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rs, err := p.claim(partition, fence, reqs)
	if err != nil {
		return ClaimResult{}, err
	}
	return rs[0], nil
}

// ClaimMany is Pool.ClaimMany.
func (p *Memory) ClaimMany(_ context.Context, partition string, fence int64, reqs []ClaimRequest, then ...Scan) ([]Claimed, [][]matcher.Entry, error) {
	if err := checkPartition(partition); err != nil {
		return nil, nil, fmt.Errorf("claim in %s: %w", partition, err)
	}
	if fence < 0 {
		return nil, nil, fmt.Errorf("claim in %s: negative fence token %d", partition, fence)
	}
	if len(reqs) > 0 {
		if err := checkClaims(fence, reqs); err != nil {
			return nil, nil, fmt.Errorf("claim in %s: %w", partition, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Claimed, len(reqs))
	if len(reqs) > 0 {
		rs, err := p.claim(partition, fence, reqs)
		for i := range reqs {
			if err != nil {
				out[i].Err = err
			} else {
				out[i].ClaimResult = rs[i]
			}
		}
	}
	read := make([][]matcher.Entry, len(then))
	if len(then) > 0 {
		if got, err := p.scanMany(partition, then); err == nil {
			read = got
		}
	}
	return out, read, nil
}

// checkClaims checks reqs as claimCall does.
func checkClaims(fence int64, reqs []ClaimRequest) error {
	if fence < 0 {
		return fmt.Errorf("negative fence token %d", fence)
	}
	for _, r := range reqs {
		if r.MatchID == "" {
			return errors.New("empty match id")
		}
		if len(r.Entries) == 0 {
			return fmt.Errorf("match %s: no tickets", r.MatchID)
		}
		for i, e := range r.Entries {
			if err := checkEntry(e); err != nil {
				return fmt.Errorf("match %s: %w", r.MatchID, err)
			}
			if slices.ContainsFunc(r.Entries[:i], func(o matcher.Entry) bool { return o.TicketID == e.TicketID }) {
				return fmt.Errorf("match %s: ticket %s listed twice", r.MatchID, e.TicketID)
			}
		}
	}
	return nil
}

// claim is claim.lua: fenced, each group all or nothing, in order.
func (p *Memory) claim(partition string, fence int64, reqs []ClaimRequest) ([]ClaimResult, error) {
	if fence != 0 && p.fences[partition] != fence {
		return nil, ErrStaleFence
	}
	p.sweep()
	pt, tg := p.part(partition), p.tag(partition)
	// The members taken, each marked so; and those of a group, each looked
	// up once (by its member formatted in buf, which the lookup does not
	// keep).
	taken, mms := p.taken[:0], p.group[:0]
	defer func() {
		clear(taken)
		clear(mms)
		p.taken, p.group = taken[:0], mms[:0]
	}()
	var buf [96]byte
	out := make([]ClaimResult, len(reqs))
	until := p.clock().Add(p.claimTTL)
	for g, r := range reqs {
		var missing []string
		mms = mms[:0]
		for _, e := range r.Entries {
			mm := pt.mems[string(appendMember(buf[:0], e))]
			mms = append(mms, mm)
			if mm == nil || mm.taken {
				missing = append(missing, e.TicketID)
			}
		}
		if missing != nil {
			out[g] = ClaimResult{Missing: missing}
			continue
		}
		names := make([]string, 0, len(r.Entries))
		for k, e := range r.Entries {
			mm := mms[k]
			mm.taken = true
			taken = append(taken, mm)
			// As claim.lua, the mark is written over whatever the hash
			// held, ended or not.
			h := tg.tickets[e.TicketID]
			if h == nil {
				h = &memTicket{}
				tg.tickets[e.TicketID] = h
			}
			h.state, h.match, h.from, h.fence, h.until = "claimed", r.MatchID, partition, fence, until
			p.ending(tg, e.TicketID, until)
			names = append(names, h.name)
		}
		out[g] = ClaimResult{OK: true, Names: names}
	}
	for _, mm := range taken {
		pt.drop(mm.bySkill.m, mm)
	}
	return out, nil
}

// RemoveEntry is Pool.RemoveEntry (cancel.lua).
func (p *Memory) RemoveEntry(_ context.Context, partitions []string, e matcher.Entry) (res RemoveResult, err error) {
	defer wrap(&err, "remove %s from %v", e.TicketID, partitions)
	hint := e.TicketID
	if checkEntry(e) == nil {
		hint = member(e)
	} else if slices.Contains([]byte(e.TicketID), memberSep) {
		return RemoveResult{}, fmt.Errorf("ticket id %q holds %q", e.TicketID, memberSep)
	}
	if err := checkSiblings(partitions); err != nil {
		return RemoveResult{}, err
	}
	if e.TicketID == "" {
		return RemoveResult{}, errors.New("empty ticket id")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.ticket(partitions[0], e.TicketID)
	var members []string
	if h != nil && h.m != "" {
		members = append(members, h.m)
	}
	if h == nil || hint != h.m {
		members = append(members, hint)
	}
	for _, m := range members {
		for _, part := range partitions {
			if pt := p.part(part); pt.has(m) {
				pt.del(m)
				delete(p.tag(part).tickets, e.TicketID)
				return RemoveResult{Removed: true}, nil
			}
		}
	}
	if h == nil || h.state != "claimed" {
		delete(p.tag(partitions[0]).tickets, e.TicketID)
		return RemoveResult{}, nil
	}
	return RemoveResult{ClaimedBy: h.match}, nil
}

// Requeue is Pool.Requeue.
func (p *Memory) Requeue(ctx context.Context, partition string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error) {
	return p.requeue(partition, nil, false, entries, ttl, lost, timeout)
}

// RequeueGuarded is Pool.RequeueGuarded.
func (p *Memory) RequeueGuarded(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error) {
	return p.requeue(partition, siblings, false, entries, ttl, lost, timeout)
}

// RequeueMissing is Pool.RequeueMissing.
func (p *Memory) RequeueMissing(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error) {
	return p.requeue(partition, siblings, true, entries, ttl, lost, timeout)
}

// requeue is requeue.lua.
func (p *Memory) requeue(partition string, siblings []string, deadOnly bool, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (n int, err error) {
	defer wrap(&err, "requeue %d tickets in %s", len(entries), partition)
	siblings, err = checkRequeue(partition, siblings, ttl)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	seen := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			return 0, err
		}
		if _, dup := seen[e.TicketID]; dup {
			return 0, fmt.Errorf("ticket %s listed twice", e.TicketID)
		}
		seen[e.TicketID] = struct{}{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep()
	pt, tg := p.part(partition), p.tag(partition)
	fence := p.fences[partition]
	lostMS := msOf(lost)
	until := p.clock().Add(ttl)
	for _, e := range entries {
		m := member(e)
		h := p.ticket(partition, e.TicketID)
		if p.elsewhere(partition, siblings, deadOnly, fence, e.TicketID, m, h) {
			continue
		}
		hb := msOf(e.Heartbeat)
		if lostMS > hb && (h == nil || h.m == "") {
			hb = lostMS
		}
		if h == nil {
			h = &memTicket{}
			tg.tickets[e.TicketID] = h
		}
		if h.m != "" && h.m != m {
			pt.del(h.m)
		}
		if hb > h.hb {
			h.hb = hb
		}
		h.m, h.state, h.match, h.from, h.fence, h.until = m, "waiting", "", "", 0, until
		if e.Name != "" {
			h.name = e.Name
		}
		p.ending(tg, e.TicketID, until)
		if !pt.has(m) {
			n++
		}
		pt.add(m, e.Skill, e.Enqueue.UnixMilli(), watchMS(h.hb, e.Enqueue.UnixMilli(), e.Deadline.UnixMilli(), timeout))
	}
	return n, nil
}

// elsewhere is requeue.lua's guard: whether the ticket is kept out of
// partition.
func (p *Memory) elsewhere(partition string, siblings []string, deadOnly bool, fence int64, id, m string, h *memTicket) bool {
	if h != nil && h.state == "claimed" {
		if h.from != "" && h.from != partition && (len(siblings) > 0 || deadOnly) {
			return true
		}
		if deadOnly && h.fence >= fence {
			return true
		}
	}
	for _, s := range siblings {
		sp := p.part(s)
		if sp.has(m) || (h != nil && h.m != "" && sp.has(h.m)) || sp.has(id) {
			return true
		}
	}
	return false
}

// Heartbeat is Pool.Heartbeat.
func (p *Memory) Heartbeat(ctx context.Context, partition, ticketID string, at time.Time, timeout time.Duration) (bool, error) {
	return p.HeartbeatAny(ctx, []string{partition}, ticketID, at, timeout)
}

// HeartbeatAny is Pool.HeartbeatAny (heartbeat.lua).
func (p *Memory) HeartbeatAny(_ context.Context, partitions []string, ticketID string, at time.Time, timeout time.Duration) (ok bool, err error) {
	defer wrap(&err, "heartbeat %s in %v", ticketID, partitions)
	if err := checkHeartbeat(partitions, ticketID); err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.ticket(partitions[0], ticketID)
	if h == nil || h.state != "waiting" {
		return false, nil
	}
	if a := at.UnixMilli(); a > h.hb {
		h.hb = a
	}
	e, err := parseMember(h.m)
	if err != nil {
		return true, nil
	}
	w := watchMS(h.hb, h.hb, e.Deadline.UnixMilli(), timeout)
	for _, part := range partitions {
		if pt := p.part(part); pt.has(h.m) {
			pt.setWatch(h.m, nil, w)
		}
	}
	return true, nil
}

// ScanMany is Pool.ScanMany.
func (p *Memory) ScanMany(_ context.Context, partition string, scans []Scan) (out [][]matcher.Entry, err error) {
	defer wrap(&err, "scan %s", partition)
	if err := checkScans(partition, scans); err != nil || len(scans) == 0 {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scanMany(partition, scans)
}

// scanMany is scan.lua, its reply read as scanResults reads it.
func (p *Memory) scanMany(partition string, scans []Scan) (_ [][]matcher.Entry, err error) {
	for _, s := range scans {
		if s.near != nil {
			*s.near = nil
		}
	}
	pt, tg := p.part(partition), p.tag(partition)
	out := make([][]matcher.Entry, len(scans))
	for i, s := range scans {
		if s.n <= 0 {
			continue
		}
		switch s.mode {
		case "oldest", "anchors":
			var es []matcher.Entry
			room := s.room // an anchors scan's only
			if s.mode != "anchors" {
				room = nil
			}
			if room != nil {
				es = room.anchors[:0]
			}
			if es == nil {
				es = make([]matcher.Entry, 0, min(s.n, pt.byEnq.n))
			}
			nodes := p.nodes[:0]
			for x := pt.byEnq.first(); x != nil && len(es) < s.n; x = x.next[0] {
				e, err := nodeEntry(x)
				if err != nil {
					return nil, err
				}
				es = append(es, e)
				if s.mode == "anchors" {
					nodes = append(nodes, x)
				}
			}
			if room != nil {
				room.anchors = es
			}
			out[i] = es
			var near [][]matcher.Entry
			if s.mode == "anchors" && len(es) == s.n {
				near, err = p.anchorsNear(pt, s, es, nodes)
			}
			clear(nodes)
			p.nodes = nodes[:0]
			if err != nil {
				return nil, err
			}
			if near != nil {
				*s.near = near
			}
		case "watch":
			now, err := strconv.ParseInt(s.params[0], 10, 64)
			if err != nil {
				return nil, err
			}
			var es []matcher.Entry
			for x := pt.byWatch.first(); x != nil && x.score <= now && len(es) < s.n; x = x.next[0] {
				m := x.m
				e, err := nodeEntry(x)
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
			es := []matcher.Entry{}
			for x := pt.bySkill.seek(lo, false); x != nil && x.score <= hi && len(es) < s.n; x = x.next[0] {
				e, err := nodeEntry(x)
				if err != nil {
					return nil, err
				}
				es = append(es, e)
			}
			out[i] = es
		case "nearest":
			var at *ixNode[float64]
			found := false
			if len(s.params) > 1 && s.params[1] != "" {
				if mm := pt.mems[s.params[1]]; mm != nil {
					at, found = mm.bySkill.next[0], true
				}
			}
			if !found {
				at = pt.bySkill.seek(s.skill, true)
			}
			if out[i], err = p.closestAround(pt.bySkill, at, s.skill, s.n); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("scan: unknown mode %s", s.mode)
		}
	}
	return out, nil
}

// closestAround is closestMembers(o.around(at, n), skill, n) over the
// entries parsed when added: the same n, in the same order. It chooses as
// matcher.Closest does (by distance, then enqueue, then ticket id, each
// after every one it is not closer than) but over pointers into the
// nodes, so that only the n chosen are copied; the members closestMembers
// leaves out before choosing are farther than the n-th and change nothing.
func (p *Memory) closestAround(o *ordered[float64], at *ixNode[float64], skill float64, n int) ([]matcher.Entry, error) {
	return p.appendClosest([]matcher.Entry{}, o, at, skill, n)
}

// anchorsNear is the candidates of an anchors scan's anchors es, read at
// nodes: one list each, in one storage (s's room when it has one).
func (p *Memory) anchorsNear(pt *memPart, s Scan, es []matcher.Entry, nodes []*ixNode[int64]) ([][]matcher.Entry, error) {
	var near [][]matcher.Entry
	var all []matcher.Entry
	if r := s.room; r != nil {
		near, all = r.lists[:0], r.entries[:0]
		defer func() { r.lists, r.entries = near, all }()
	} else {
		near, all = make([][]matcher.Entry, 0, len(es)), make([]matcher.Entry, 0, len(es)*min(s.limit, pt.bySkill.n))
	}
	if all == nil {
		all = []matcher.Entry{} // an anchor's list is empty, never nil
	}
	for j, y := range nodes {
		var x *ixNode[float64]
		if mm := y.mm; mm != nil {
			x = mm.bySkill
		} else if mm := pt.mems[y.m]; mm != nil {
			x = mm.bySkill
		}
		from := len(all)
		if x != nil {
			var err error
			if all, err = p.appendClosest(all, pt.bySkill, x.next[0], es[j].Skill, s.limit); err != nil {
				return nil, err
			}
		}
		// Capped, so that a list never runs into the next.
		near = append(near, all[from:len(all):len(all)])
	}
	return near, nil
}

// appendClosest is closestAround appending to dst.
func (p *Memory) appendClosest(dst []matcher.Entry, o *ordered[float64], at *ixNode[float64], skill float64, n int) ([]matcher.Entry, error) {
	lo, k := o.span(at, n)
	if k == 0 {
		return dst, nil
	}
	closer := func(a, b *matcher.Entry) bool {
		da, db := math.Abs(a.Skill-skill), math.Abs(b.Skill-skill)
		if da != db {
			return da < db
		}
		if !a.Enqueue.Equal(b.Enqueue) {
			return a.Enqueue.Before(b.Enqueue)
		}
		return a.TicketID < b.TicketID
	}
	sel := p.near[:0]
	defer func() { clear(sel); p.near = sel[:0] }()
	for x := lo; k > 0; x, k = x.next[0], k-1 {
		var e *matcher.Entry
		if x.mm != nil {
			if x.mm.err != nil {
				return nil, x.mm.err
			}
			e = &x.mm.e
		} else {
			pe, err := parseMember(x.m)
			if err != nil {
				return nil, err
			}
			e = &pe
		}
		if len(sel) == n && !closer(e, sel[n-1]) {
			continue
		}
		i := 0
		for i < len(sel) && !closer(e, sel[i]) {
			i++
		}
		if len(sel) < n {
			sel = append(sel, nil)
		}
		copy(sel[i+1:], sel[i:len(sel)-1])
		sel[i] = e
	}
	dst = slices.Grow(dst, len(sel))
	for _, e := range sel {
		dst = append(dst, *e)
	}
	return dst, nil
}

// Oldest is Pool.Oldest.
func (p *Memory) Oldest(ctx context.Context, partition string, n int) ([]matcher.Entry, error) {
	return p.scan(ctx, partition, OldestScan(n))
}

// Nearest is Pool.Nearest.
func (p *Memory) Nearest(ctx context.Context, partition string, skill float64, n int) ([]matcher.Entry, error) {
	if math.IsNaN(skill) || math.IsInf(skill, 0) {
		return nil, fmt.Errorf("scan nearest of %s: skill %v not finite", partition, skill)
	}
	return p.scan(ctx, partition, NearestScan(skill, n))
}

// Window is Pool.Window.
func (p *Memory) Window(ctx context.Context, partition string, lo, hi float64, n int) ([]matcher.Entry, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return nil, fmt.Errorf("scan window of %s: NaN bound", partition)
	}
	return p.scan(ctx, partition, Scan{mode: "window", n: n, params: []string{score(lo), score(hi)}})
}

func (p *Memory) scan(ctx context.Context, partition string, s Scan) ([]matcher.Entry, error) {
	return scanOne(ctx, p.ScanMany, partition, s)
}

// Size is Pool.Size.
func (p *Memory) Size(_ context.Context, partition string) (int64, error) {
	if err := checkPartition(partition); err != nil {
		return 0, fmt.Errorf("size of %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(len(p.part(partition).mems)), nil
}

// Sizes is Pool.Sizes.
func (p *Memory) Sizes(ctx context.Context, partitions []string) ([]int64, error) {
	for _, part := range partitions {
		if err := checkPartition(part); err != nil {
			return nil, fmt.Errorf("sizes: %w", err)
		}
	}
	if len(partitions) == 0 {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int64, len(partitions))
	for i, part := range partitions {
		out[i] = int64(len(p.part(part).mems))
	}
	return out, nil
}

// Members is Pool.Members.
func (p *Memory) Members(_ context.Context, partition string) ([]matcher.Entry, error) {
	if err := checkPartition(partition); err != nil {
		return nil, fmt.Errorf("members of %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.part(partition)
	ms := make([]string, 0, pt.bySkill.n)
	for x := pt.bySkill.first(); x != nil; x = x.next[0] {
		ms = append(ms, x.m)
	}
	return parsed(ms)
}

// Rewatch is Pool.Rewatch.
func (p *Memory) Rewatch(_ context.Context, partition string, es []matcher.Entry, timeout time.Duration) (n int, err error) {
	if err := checkPartition(partition); err != nil {
		return 0, fmt.Errorf("rewatch %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.part(partition)
	for _, e := range es {
		if e.UserID == "" || checkEntry(e) != nil {
			continue
		}
		if m := member(e); pt.has(m) && !pt.mems[m].watched {
			pt.setWatch(m, nil, watchAt(e, timeout).UnixMilli())
			n++
		}
	}
	return n, nil
}

// DropLegacy is Pool.DropLegacy: a memory pool has no older layout.
func (p *Memory) DropLegacy(_ context.Context, partition string) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("drop legacy sets of %s: %w", partition, err)
	}
	return nil
}

// Locate is Pool.Locate.
func (p *Memory) Locate(_ context.Context, partitions []string, ticketID string) (string, matcher.Entry, bool, error) {
	if err := checkSiblings(partitions); err != nil {
		return "", matcher.Entry{}, false, fmt.Errorf("locate %s: %w", ticketID, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.ticket(partitions[0], ticketID)
	if h == nil || h.m == "" {
		return "", matcher.Entry{}, false, nil
	}
	for _, part := range partitions {
		if p.part(part).has(h.m) {
			e, err := parseMember(h.m)
			if err != nil {
				return "", matcher.Entry{}, false, fmt.Errorf("locate %s: %w", ticketID, err)
			}
			e.Heartbeat = timeOf(h.hb)
			return part, e, true, nil
		}
	}
	return "", matcher.Entry{}, false, nil
}

// Promote is Pool.Promote (promote.lua).
func (p *Memory) Promote(_ context.Context, from, to string, cutoff time.Time, n int) (moved []string, err error) {
	defer wrap(&err, "promote from %s to %s", from, to)
	if err := checkPromote(from, to); err != nil || n <= 0 {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, t := p.part(from), p.part(to)
	moved = []string{}
	var ms []string
	for x := f.byEnq.first(); x != nil && x.score <= cutoff.UnixMilli() && len(ms) < n; x = x.next[0] {
		ms = append(ms, x.m)
	}
	for _, m := range ms {
		mm := f.mems[m]
		t.add(m, mm.skill, mm.enq, mm.watch)
		f.del(m)
		moved = append(moved, memberID(m))
	}
	return moved, nil
}

// Offer is Pool.Offer (offer.lua).
func (p *Memory) Offer(_ context.Context, to, home string, entries []matcher.Entry, now, expiry time.Time) (n int, err error) {
	defer wrap(&err, "offer %d tickets of %s to %s", len(entries), home, to)
	if err := checkOffer(to, home, now, expiry); err != nil || len(entries) == 0 {
		return 0, err
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			return 0, err
		}
		if seen[e.TicketID] {
			return 0, fmt.Errorf("ticket %s listed twice", e.TicketID)
		}
		seen[e.TicketID] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.part(to)
	for id, o := range pt.offers {
		if o.expiry < now.UnixMilli() {
			delete(pt.offers, id)
		}
	}
	for _, e := range entries {
		pt.offers[e.TicketID] = memOffer{expiry: expiry.UnixMilli(), m: member(e), hb: msOf(e.Heartbeat), home: home}
	}
	return len(entries), nil
}

// Offers is Pool.Offers.
func (p *Memory) Offers(_ context.Context, partition string, now time.Time, n int) ([]matcher.Entry, error) {
	if err := checkPartition(partition); err != nil {
		return nil, fmt.Errorf("offers of %s: %w", partition, err)
	}
	if n <= 0 {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.part(partition)
	exp := make(map[string]int64, len(pt.offers))
	for id, o := range pt.offers {
		if o.expiry >= now.UnixMilli() {
			exp[id] = o.expiry
		}
	}
	var es []matcher.Entry
	for _, id := range byScore(exp)[:min(n, len(exp))] {
		o := pt.offers[id]
		e, err := parseMember(o.m)
		if err != nil {
			return nil, fmt.Errorf("offers of %s: %w", partition, err)
		}
		e.Heartbeat, e.Home = timeOf(o.hb), o.home
		es = append(es, e)
	}
	return es, nil
}

// WithdrawOffers is Pool.WithdrawOffers.
func (p *Memory) WithdrawOffers(_ context.Context, partition string, ticketIDs ...string) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("withdraw offers from %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ticketIDs {
		delete(p.part(partition).offers, id)
	}
	return nil
}

// AddPending is Pool.AddPending.
func (p *Memory) AddPending(_ context.Context, partition string, ms ...Pending) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("add pending: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range ms {
		p.tag(partition).pending[m.MatchID] = m.AcceptBy.UnixMilli()
	}
	return nil
}

// RemovePending is Pool.RemovePending.
func (p *Memory) RemovePending(_ context.Context, partition string, matchIDs ...string) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("remove pending: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range matchIDs {
		delete(p.tag(partition).pending, id)
	}
	return nil
}

// PendingDue is Pool.PendingDue.
func (p *Memory) PendingDue(_ context.Context, partition string, now time.Time, n int) ([]string, error) {
	if err := checkPartition(partition); err != nil {
		return nil, fmt.Errorf("pending of %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pend := p.tag(partition).pending
	ids := []string{}
	for _, id := range byScore(pend) {
		if n > 0 && (pend[id] > now.UnixMilli() || len(ids) == n) {
			break
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// AcquireLease is Pool.AcquireLease: held while now is before its expiry.
func (p *Memory) AcquireLease(_ context.Context, partition, owner string, now time.Time, ttl time.Duration, floor int64) (int64, error) {
	if err := checkLease(partition, owner, now, ttl); err != nil {
		return 0, fmt.Errorf("acquire lease of %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.leases[partition]; ok && now.UnixMilli() < l.until {
		return 0, nil
	}
	token := max(p.fences[partition]+1, floor+1)
	p.fences[partition] = token
	p.leases[partition] = memLease{owner: owner, token: token, until: now.Add(ttl).UnixMilli()}
	return token, nil
}

// RenewLease is Pool.RenewLease.
func (p *Memory) RenewLease(_ context.Context, partition, owner string, token int64, now time.Time, ttl time.Duration) (bool, error) {
	if err := checkLease(partition, owner, now, ttl); err != nil {
		return false, fmt.Errorf("renew lease of %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.leases[partition]
	if !ok || now.UnixMilli() >= l.until || l.owner != owner || l.token != token || p.fences[partition] != token {
		return false, nil
	}
	l.until = now.Add(ttl).UnixMilli()
	p.leases[partition] = l
	return true, nil
}

// ReleaseLease is Pool.ReleaseLease: like internal/redislease's release it reads no
// clock.
func (p *Memory) ReleaseLease(_ context.Context, partition, owner string, token int64) (bool, error) {
	if err := checkOwner(partition, owner); err != nil {
		return false, fmt.Errorf("release lease of %s: %w", partition, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.leases[partition]
	if !ok || l.owner != owner || l.token != token {
		return false, nil
	}
	delete(p.leases, partition)
	return true, nil
}

// SetCooldown is Pool.SetCooldown.
func (p *Memory) SetCooldown(_ context.Context, queue, userID string, now time.Time, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cds[queue+"\x00"+userID] = time.UnixMilli(now.Add(d).UnixMilli())
	return nil
}

// Cooldown is Pool.Cooldown.
func (p *Memory) Cooldown(_ context.Context, queue, userID string, now time.Time) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.cds[queue+"\x00"+userID]
	if !ok {
		return 0, nil
	}
	return max(0, until.Sub(now)), nil
}

// RememberSkill is Pool.RememberSkill.
func (p *Memory) RememberSkill(_ context.Context, userID string, skill float64) error {
	if math.IsNaN(skill) || math.IsInf(skill, 0) {
		return fmt.Errorf("remember skill of %s: %v not finite", userID, skill)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skills[userID] = memSkill{skill: skill, until: p.clock().Add(lastSkillTTL)}
	return nil
}

// LastSkill is Pool.LastSkill.
func (p *Memory) LastSkill(_ context.Context, userID string) (float64, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.skills[userID]
	if !ok || !p.clock().Before(s.until) {
		return 0, false, nil
	}
	return s.skill, true, nil
}

// MarkAllocationFailure is Pool.MarkAllocationFailure.
func (p *Memory) MarkAllocationFailure(_ context.Context, partition string, now time.Time, ttl time.Duration) error {
	if err := checkPartition(partition); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allocTo[partition] = time.UnixMilli(now.Add(max(ttl, time.Millisecond)).UnixMilli())
	return nil
}

// AllocationFailing is Pool.AllocationFailing.
func (p *Memory) AllocationFailing(_ context.Context, partition string, now time.Time) (bool, error) {
	if err := checkPartition(partition); err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.allocTo[partition].After(now), nil
}

// RecordOutcomes is Pool.RecordOutcomes.
func (p *Memory) RecordOutcomes(_ context.Context, partition string, matchAts []time.Time, outcomes []Outcome) error {
	if err := checkPartition(partition); err != nil {
		return fmt.Errorf("record outcomes: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	tg := p.tag(partition)
	for _, o := range outcomes {
		o = Outcome{At: time.UnixMilli(o.At.UnixMilli()), Wait: time.Duration(o.Wait.Milliseconds()) * time.Millisecond, Kind: o.Kind}
		tg.waits = keepNewest(append(tg.waits, o))
	}
	for _, at := range matchAts {
		tg.matches = keepNewest(append(tg.matches, time.UnixMilli(at.UnixMilli())))
	}
	return nil
}

// Stats is Pool.Stats.
func (p *Memory) Stats(_ context.Context, partition string) ([]Outcome, []time.Time, error) {
	if err := checkPartition(partition); err != nil {
		return nil, nil, fmt.Errorf("stats: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	tg := p.tag(partition)
	var outs []Outcome
	var ms []time.Time
	if len(tg.waits) > 0 {
		outs = newestFirst(tg.waits)
	}
	if len(tg.matches) > 0 {
		ms = newestFirst(tg.matches)
	}
	return outs, ms, nil
}

// keepNewest cuts an oldest-first list back to its newest StatsCap once it
// holds twice as many.
func keepNewest[T any](l []T) []T {
	if len(l) < 2*StatsCap {
		return l
	}
	return append(l[:0], l[len(l)-StatsCap:]...)
}

// newestFirst is the newest StatsCap of an oldest-first list, newest first,
// as the Redis lists are read.
func newestFirst[T any](l []T) []T {
	out := slices.Clone(l[max(0, len(l)-StatsCap):])
	slices.Reverse(out)
	return out
}
