package line

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/matchgate/matchgate/admission"
)

// Memory is the line in process memory: what Redis does, decided alike by
// the callers' nows, for tests and virtual-clock runs. It is safe for
// concurrent use; every call is atomic.
type Memory struct {
	mu     sync.Mutex
	cfg    config
	queues map[string]*memQueue
}

var _ admission.Line = (*Memory)(nil)

// NewMemory returns an empty line.
func NewMemory(opts ...Option) *Memory {
	return &Memory{cfg: configOf(opts), queues: map[string]*memQueue{}}
}

type memWaiter struct {
	seq  int64
	user string
}

func cmpWaiter(a, b memWaiter) int {
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	return strings.Compare(a.user, b.user)
}

type memTaken struct {
	seq int64
	at  int64 // unix ms
	// seen is when the waiter was last seen before the take, unix ms, if
	// it was (hasSeen).
	seen    int64
	hasSeen bool
}

// memTake is one take in the window: its instant, unix ms, and how many
// it admitted.
type memTake struct {
	at int64
	n  int
}

type memLease struct {
	owner string
	token int64
	until int64 // unix ms
}

type memQueue struct {
	line  []memWaiter         // by seq, then user id, as a sorted set orders
	in    map[string]int64    // the users in line, with their seq
	proc  map[string]memTaken // taken, not acknowledged
	win   []memTake           // the takes that admitted anyone, by instant
	acked map[int64]int64     // acknowledged seq → taken at, unix ms
	drops ackHeap             // acked's entries, oldest first
	seen  map[string]int64    // the users in line → last seen, unix ms
	// passed counts the waiters taken from the front, less those returned.
	passed int64
	lease  *memLease
	fence  int64
}

func (m *Memory) queue(q string) *memQueue {
	mq := m.queues[q]
	if mq == nil {
		mq = &memQueue{in: map[string]int64{}, proc: map[string]memTaken{}, acked: map[int64]int64{}, seen: map[string]int64{}}
		m.queues[q] = mq
	}
	return mq
}

// Add is Redis.Add.
func (m *Memory) Add(_ context.Context, queue string, places []admission.Place, now time.Time) error {
	if err := checkQueue(queue); err != nil {
		return fmt.Errorf("add %d places to %s: %w", len(places), queue, err)
	}
	if now.IsZero() {
		return fmt.Errorf("add %d places to %s: zero now", len(places), queue)
	}
	for _, p := range places {
		if err := checkPlace(queue, p); err != nil {
			return fmt.Errorf("add %d places to %s: %w", len(places), queue, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	at := now.UnixMilli()
	var added []memWaiter
	for _, p := range places {
		if _, ok := q.proc[p.UserID]; ok {
			continue
		}
		if _, ok := q.acked[p.Seq]; ok {
			continue
		}
		if _, ok := q.in[p.UserID]; ok {
			if _, ok := q.seen[p.UserID]; !ok {
				q.seen[p.UserID] = at
			}
			continue
		}
		q.in[p.UserID] = p.Seq
		q.seen[p.UserID] = at
		added = append(added, memWaiter{seq: p.Seq, user: p.UserID})
	}
	q.insert(added)
	return nil
}

// insert puts waiters (none of them in the line) into it, in order.
func (q *memQueue) insert(ws []memWaiter) {
	if len(ws) == 0 {
		return
	}
	slices.SortFunc(ws, cmpWaiter)
	if len(ws) <= 16 {
		for _, w := range ws {
			i, _ := slices.BinarySearchFunc(q.line, w, cmpWaiter)
			q.line = slices.Insert(q.line, i, w)
		}
		return
	}
	merged := make([]memWaiter, 0, len(q.line)+len(ws))
	i, j := 0, 0
	for i < len(q.line) && j < len(ws) {
		if cmpWaiter(q.line[i], ws[j]) < 0 {
			merged = append(merged, q.line[i])
			i++
		} else {
			merged = append(merged, ws[j])
			j++
		}
	}
	merged = append(merged, q.line[i:]...)
	q.line = append(merged, ws[j:]...)
}

// Rank is Redis.Rank.
func (m *Memory) Rank(_ context.Context, queue, userID string) (rank, total int64, ok bool, err error) {
	if err := checkQueue(queue); err != nil {
		return 0, 0, false, fmt.Errorf("rank of %s in %s: %w", userID, queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	seq, ok := q.in[userID]
	if !ok {
		return 0, int64(len(q.line)), false, nil
	}
	i, _ := slices.BinarySearchFunc(q.line, memWaiter{seq: seq, user: userID}, cmpWaiter)
	return int64(i), int64(len(q.line)), true, nil
}

// Ranks is Redis.Ranks, read at once.
func (m *Memory) Ranks(_ context.Context, queue string, userIDs []string) ([]admission.Rank, int64, error) {
	if err := checkQueue(queue); err != nil {
		return nil, 0, fmt.Errorf("ranks of %d in %s: %w", len(userIDs), queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	out := make([]admission.Rank, len(userIDs))
	for i, id := range userIDs {
		seq, ok := q.in[id]
		if !ok {
			continue
		}
		r, _ := slices.BinarySearchFunc(q.line, memWaiter{seq: seq, user: id}, cmpWaiter)
		out[i] = admission.Rank{Rank: int64(r), Total: int64(len(q.line)), OK: true}
	}
	return out, q.passed, nil
}

// Take is Redis.Take, window and all (see the package doc).
func (m *Memory) Take(_ context.Context, queue string, fence int64, n, rate int, now time.Time) ([]admission.Taken, int64, error) {
	if err := checkQueue(queue); err != nil {
		return nil, 0, fmt.Errorf("take from %s: %w", queue, err)
	}
	if now.IsZero() {
		return nil, 0, fmt.Errorf("take from %s: zero now", queue)
	}
	at := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	if l := q.lease; l == nil || l.token != fence || l.until <= at || q.fence != fence {
		return nil, 0, fmt.Errorf("take from %s: fence %d: %w", queue, fence, admission.ErrFenced)
	}
	q.dropAcked(at - m.cfg.ackedFor.Milliseconds())

	bound := at
	if len(q.win) > 0 {
		latest := q.win[len(q.win)-1].at
		if at < latest-lag.Milliseconds() {
			return nil, q.passed, nil
		}
		bound = min(at, latest)
	}
	drop := sort.Search(len(q.win), func(i int) bool { return q.win[i].at > bound-span.Milliseconds()-lag.Milliseconds() })
	q.win = q.win[drop:]
	count := 0
	for _, w := range q.win[sort.Search(len(q.win), func(i int) bool { return q.win[i].at > at-span.Milliseconds() }):] {
		count += w.n
	}

	k := min(n, rate-count, len(q.line))
	if k <= 0 {
		return nil, q.passed, nil
	}
	out := make([]admission.Taken, k)
	for i, w := range q.line[:k] {
		delete(q.in, w.user)
		seen, ok := q.seen[w.user]
		q.proc[w.user] = memTaken{seq: w.seq, at: at, seen: seen, hasSeen: ok}
		delete(q.seen, w.user)
		out[i] = admission.Taken{UserID: w.user, Seq: w.seq, At: time.UnixMilli(at)}
	}
	q.line = q.line[k:]
	q.passed += int64(k)
	i := sort.Search(len(q.win), func(i int) bool { return q.win[i].at > at })
	q.win = slices.Insert(q.win, i, memTake{at: at, n: k})
	return out, q.passed, nil
}

// dropAcked forgets the acknowledged places taken at or before cut.
func (q *memQueue) dropAcked(cut int64) {
	for len(q.drops) > 0 && q.drops[0].at <= cut {
		e := heap.Pop(&q.drops).(ackEntry)
		if q.acked[e.seq] == e.at {
			delete(q.acked, e.seq)
		}
	}
}

// Ack is Redis.Ack.
func (m *Memory) Ack(_ context.Context, queue string, userIDs []string) error {
	if err := checkQueue(queue); err != nil {
		return fmt.Errorf("ack %d in %s: %w", len(userIDs), queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	for _, id := range userIDs {
		t, ok := q.proc[id]
		if !ok {
			continue
		}
		delete(q.proc, id)
		q.acked[t.seq] = t.at
		heap.Push(&q.drops, ackEntry{at: t.at, seq: t.seq})
	}
	return nil
}

// Stale is Redis.Stale.
func (m *Memory) Stale(_ context.Context, queue string, before time.Time) ([]admission.Taken, error) {
	if err := checkQueue(queue); err != nil {
		return nil, fmt.Errorf("stale of %s: %w", queue, err)
	}
	cut := before.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []admission.Taken
	for id, t := range m.queue(queue).proc {
		if t.at < cut {
			out = append(out, admission.Taken{UserID: id, Seq: t.seq, At: time.UnixMilli(t.at)})
		}
	}
	sortTaken(out)
	return out, nil
}

// Return is Redis.Return.
func (m *Memory) Return(_ context.Context, queue string, taken []admission.Taken) error {
	if err := checkQueue(queue); err != nil {
		return fmt.Errorf("return %d to %s: %w", len(taken), queue, err)
	}
	for _, t := range taken {
		if err := checkSeq(t.Seq); err != nil {
			return fmt.Errorf("return %d to %s: %w", len(taken), queue, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	var back []memWaiter
	for _, t := range taken {
		p, ok := q.proc[t.UserID]
		if !ok || p.seq != t.Seq {
			continue
		}
		delete(q.proc, t.UserID)
		if _, ok := q.in[t.UserID]; ok {
			continue
		}
		q.in[t.UserID] = t.Seq
		q.seen[t.UserID] = p.at
		if p.hasSeen {
			q.seen[t.UserID] = p.seen
		}
		back = append(back, memWaiter{seq: t.Seq, user: t.UserID})
	}
	q.insert(back)
	q.passed -= int64(len(back))
	return nil
}

// Remove is Redis.Remove.
func (m *Memory) Remove(ctx context.Context, queue string, userIDs []string) error {
	_, err := m.remove(ctx, queue, userIDs)
	return err
}

func (m *Memory) remove(_ context.Context, queue string, userIDs []string) (int64, error) {
	if err := checkQueue(queue); err != nil {
		return 0, fmt.Errorf("remove %d from %s: %w", len(userIDs), queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	var removed int64
	for _, id := range userIDs {
		seq, ok := q.in[id]
		if !ok {
			continue
		}
		delete(q.in, id)
		delete(q.seen, id)
		i, _ := slices.BinarySearchFunc(q.line, memWaiter{seq: seq, user: id}, cmpWaiter)
		q.line = slices.Delete(q.line, i, i+1)
		removed++
	}
	return removed, nil
}

// Touch is Redis.Touch.
func (m *Memory) Touch(_ context.Context, queue string, userIDs []string, now time.Time) error {
	if err := checkQueue(queue); err != nil {
		return fmt.Errorf("touch %d in %s: %w", len(userIDs), queue, err)
	}
	if now.IsZero() {
		return fmt.Errorf("touch %d in %s: zero now", len(userIDs), queue)
	}
	at := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	for _, id := range userIDs {
		if _, ok := q.in[id]; !ok {
			continue
		}
		if seen, ok := q.seen[id]; !ok || seen < at {
			q.seen[id] = at
		}
	}
	return nil
}

// Idle is Redis.Idle. It reads every waiter's seen instant: the memory
// line serves tests and virtual-clock runs, where a pass a second over
// the whole line costs little.
func (m *Memory) Idle(_ context.Context, queue string, before time.Time, limit int) ([]string, error) {
	if err := checkQueue(queue); err != nil {
		return nil, fmt.Errorf("idle of %s: %w", queue, err)
	}
	if limit <= 0 {
		return nil, nil
	}
	type seenAt struct {
		user string
		at   int64
	}
	cut := before.UnixMilli()
	m.mu.Lock()
	var idle []seenAt
	for id, at := range m.queue(queue).seen {
		if at < cut {
			idle = append(idle, seenAt{id, at})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(idle, func(a, b seenAt) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return strings.Compare(a.user, b.user)
	})
	out := make([]string, 0, min(limit, len(idle)))
	for _, s := range idle[:min(limit, len(idle))] {
		out = append(out, s.user)
	}
	return out, nil
}

// Head is Redis.Head.
func (m *Memory) Head(_ context.Context, queue string, n int) ([]admission.Taken, error) {
	if err := checkQueue(queue); err != nil {
		return nil, fmt.Errorf("head of %s: %w", queue, err)
	}
	if n <= 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	out := make([]admission.Taken, 0, min(n, len(q.line)))
	for _, w := range q.line[:min(n, len(q.line))] {
		out = append(out, admission.Taken{UserID: w.user, Seq: w.seq})
	}
	return out, nil
}

// Size is Redis.Size.
func (m *Memory) Size(_ context.Context, queue string) (int64, error) {
	if err := checkQueue(queue); err != nil {
		return 0, fmt.Errorf("size of %s: %w", queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.queue(queue).line)), nil
}

// AcquireLease is Redis.AcquireLease: held while now is before its expiry.
func (m *Memory) AcquireLease(_ context.Context, queue, owner string, now time.Time, ttl time.Duration, floor int64) (int64, error) {
	if err := checkLease(queue, owner, now, ttl); err != nil {
		return 0, fmt.Errorf("acquire lease of %s: %w", queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	if q.lease != nil && now.UnixMilli() < q.lease.until {
		return 0, nil
	}
	q.fence = max(q.fence+1, floor+1)
	q.lease = &memLease{owner: owner, token: q.fence, until: now.Add(ttl).UnixMilli()}
	return q.fence, nil
}

// RenewLease is Redis.RenewLease.
func (m *Memory) RenewLease(_ context.Context, queue, owner string, token int64, now time.Time, ttl time.Duration) (bool, error) {
	if err := checkLease(queue, owner, now, ttl); err != nil {
		return false, fmt.Errorf("renew lease of %s: %w", queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	l := q.lease
	if l == nil || now.UnixMilli() >= l.until || l.owner != owner || l.token != token || q.fence != token {
		return false, nil
	}
	l.until = now.Add(ttl).UnixMilli()
	return true, nil
}

// ReleaseLease is Redis.ReleaseLease: like internal/redislease's release it reads no
// clock.
func (m *Memory) ReleaseLease(_ context.Context, queue, owner string, token int64) (bool, error) {
	if err := checkOwner(queue, owner); err != nil {
		return false, fmt.Errorf("release lease of %s: %w", queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(queue)
	if q.lease == nil || q.lease.owner != owner || q.lease.token != token {
		return false, nil
	}
	q.lease = nil
	return true, nil
}

// ackEntry is one acknowledged place in the order it is forgotten.
type ackEntry struct{ at, seq int64 }

type ackHeap []ackEntry

func (h ackHeap) Len() int           { return len(h) }
func (h ackHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h ackHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ackHeap) Push(x any)        { *h = append(*h, x.(ackEntry)) }
func (h *ackHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
