package record

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/pgtime"
)

// Memory is an admission.Record held in process memory, for the embedded
// single-node default and for tests. One mutex serialises every method,
// which gives it the isolation PostgreSQL's transactions give Postgres; it
// keeps every place for the life of the process.
type Memory struct {
	mu     sync.Mutex
	queues map[string]*memQueue
	// tokens holds every token given, in any queue: PostgreSQL's index on
	// token is one for all queues.
	tokens map[string]struct{}
	// lastSeq is the last Seq given, one counter for every queue as the
	// table's identity.
	lastSeq int64
}

// memQueue is one queue's places and the indexes PostgreSQL keeps on them.
type memQueue struct {
	places map[int64]*admission.Place // by Seq
	newest map[string]int64           // user → Seq of their newest place
	live   map[string]int64           // user → Seq of their live place
	tokens map[string]int64           // token → Seq
	// waiting holds the Seqs of places entered WAITING, ascending; those
	// that left WAITING are skipped when read and dropped once they are
	// half of it (gone counts them), so that admitting from the front
	// moves no memory.
	waiting []int64
	gone    int
	// holding holds the READY and CLAIMED places, for Expire.
	holding map[int64]struct{}
	// admitted holds the admitted places in (AdmittedAt, Seq) order.
	admitted []int64
	epoch    int64
}

// NewMemory returns an empty in-memory record.
func NewMemory() *Memory {
	return &Memory{queues: make(map[string]*memQueue), tokens: make(map[string]struct{})}
}

var _ admission.Record = (*Memory)(nil)

// queue returns the state of q, made on first use.
func (m *Memory) queue(q string) *memQueue {
	s, ok := m.queues[q]
	if !ok {
		s = &memQueue{
			places:  make(map[int64]*admission.Place),
			newest:  make(map[string]int64),
			live:    make(map[string]int64),
			tokens:  make(map[string]int64),
			holding: make(map[int64]struct{}),
		}
		m.queues[q] = s
	}
	return s
}

// set records a change of p's status, keeping the indexes; p is changed
// in place and its version moved on.
func (s *memQueue) set(p *admission.Place, to admission.Status) {
	from := p.Status
	p.Status = to
	p.Version++
	if from == admission.StatusWaiting && to != admission.StatusWaiting {
		s.gone++
		if s.gone > 64 && s.gone > len(s.waiting)/2 {
			s.waiting = slices.DeleteFunc(s.waiting, func(seq int64) bool {
				return s.places[seq].Status != admission.StatusWaiting
			})
			s.gone = 0
		}
	}
	if !to.Live() {
		delete(s.live, p.UserID)
	}
	if to == admission.StatusReady || to == admission.StatusClaimed {
		s.holding[p.Seq] = struct{}{}
	} else {
		delete(s.holding, p.Seq)
	}
}

// Enter implements admission.Record.
func (m *Memory) Enter(ctx context.Context, queue, userID string, now, predicted time.Time) (admission.Place, bool, error) {
	if err := ctx.Err(); err != nil {
		return admission.Place{}, false, fmt.Errorf("enter %s of %s: %w", queue, userID, err)
	}
	if err := checkEnter(queue, userID, now); err != nil {
		return admission.Place{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.queue(queue)
	if seq, ok := s.live[userID]; ok {
		return *s.places[seq], false, nil
	}
	m.lastSeq++
	p := &admission.Place{
		Queue:       queue,
		UserID:      userID,
		Seq:         m.lastSeq,
		Status:      admission.StatusWaiting,
		EnteredAt:   pgtime.Stamp(now),
		PredictedAt: pgtime.Stamp(predicted),
		Version:     1,
	}
	s.places[p.Seq] = p
	s.newest[userID] = p.Seq
	s.live[userID] = p.Seq
	s.waiting = append(s.waiting, p.Seq)
	return *p, true, nil
}

// Place implements admission.Record.
func (m *Memory) Place(ctx context.Context, queue, userID string) (admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return admission.Place{}, fmt.Errorf("place of %s in %s: %w", userID, queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.queues[queue]; ok {
		if seq, ok := s.newest[userID]; ok {
			return *s.places[seq], nil
		}
	}
	return admission.Place{}, fmt.Errorf("place of %s in %s: %w", userID, queue, admission.ErrNotFound)
}

// Leave implements admission.Record: a WAITING or READY place ends LEFT. A
// CLAIMED one is refused with ErrAlreadyClaimed (the downstream is acting
// on its token); no such place is ErrNotFound.
func (m *Memory) Leave(ctx context.Context, queue, userID string, now time.Time) (admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return admission.Place{}, fmt.Errorf("leave %s of %s: %w", queue, userID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.queues[queue]
	var seq int64
	if ok {
		seq, ok = s.live[userID]
	}
	if !ok {
		return admission.Place{}, fmt.Errorf("leave %s of %s: %w", queue, userID, admission.ErrNotFound)
	}
	p := s.places[seq]
	if p.Status == admission.StatusClaimed {
		return admission.Place{}, fmt.Errorf("leave %s of %s: %w", queue, userID, admission.ErrAlreadyClaimed)
	}
	s.set(p, admission.StatusLeft)
	return *p, nil
}

// Abandon implements admission.Record. The places are returned in Seq
// order.
func (m *Memory) Abandon(ctx context.Context, queue string, userIDs []string, now time.Time) ([]admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("abandon %d places of %s: %w", len(userIDs), queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.queues[queue]
	if !ok {
		return nil, nil
	}
	var out []admission.Place
	for _, u := range userIDs {
		seq, ok := s.live[u]
		if !ok || s.places[seq].Status != admission.StatusWaiting {
			continue
		}
		p := s.places[seq]
		s.set(p, admission.StatusAbandoned)
		out = append(out, *p)
	}
	slices.SortFunc(out, bySeq)
	return out, nil
}

// Admit implements admission.Record. An epoch above the recorded one is
// recorded, as SetEpoch would: the first admission of a new admitter fences
// the old one even when its SetEpoch was lost.
func (m *Memory) Admit(ctx context.Context, queue string, epoch int64, admits []admission.Admit, now time.Time, ttl time.Duration) ([]admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("admit %d to %s: %w", len(admits), queue, err)
	}
	if err := checkAdmit(queue, epoch, admits, now, ttl); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.queue(queue)
	if s.epoch > epoch {
		return nil, fmt.Errorf("admit %d to %s: epoch %d is below %d: %w", len(admits), queue, epoch, s.epoch, admission.ErrStaleEpoch)
	}
	// Everything is checked before anything changes: one Admit is all or
	// nothing, as its transaction in Postgres.
	for _, a := range admits {
		p, ok := s.places[a.Seq]
		if !ok || p.UserID != a.UserID {
			return nil, fmt.Errorf("admit %s (seq %d) to %s: %w", a.UserID, a.Seq, queue, admission.ErrNotFound)
		}
		if _, taken := m.tokens[a.Token]; taken && p.Status == admission.StatusWaiting {
			return nil, fmt.Errorf("admit %s (seq %d) to %s: token already given", a.UserID, a.Seq, queue)
		}
	}
	s.epoch = epoch
	now = pgtime.Stamp(now)
	out := make([]admission.Place, len(admits))
	for i, a := range admits {
		p := s.places[a.Seq]
		if p.Status == admission.StatusWaiting {
			p.Token, p.ExpiresAt, p.AdmittedAt = a.Token, pgtime.Stamp(now.Add(ttl)), now
			s.set(p, admission.StatusReady)
			s.tokens[a.Token] = p.Seq
			m.tokens[a.Token] = struct{}{}
			s.addAdmitted(p)
		}
		out[i] = *p
	}
	return out, nil
}

// addAdmitted files p in s.admitted, at the end unless an admission
// stamped later by another clock is there already.
func (s *memQueue) addAdmitted(p *admission.Place) {
	i, _ := slices.BinarySearchFunc(s.admitted, p, func(seq int64, p *admission.Place) int {
		return admittedOrder(s.places[seq], p)
	})
	s.admitted = slices.Insert(s.admitted, i, p.Seq)
}

func admittedOrder(a, b *admission.Place) int {
	return cmp.Or(a.AdmittedAt.Compare(b.AdmittedAt), cmp.Compare(a.Seq, b.Seq))
}

func bySeq(a, b admission.Place) int { return cmp.Compare(a.Seq, b.Seq) }

// byToken returns the place holding token in queue.
func (m *Memory) byToken(queue, token string) (*memQueue, *admission.Place, bool) {
	s, ok := m.queues[queue]
	if !ok {
		return nil, nil, false
	}
	seq, ok := s.tokens[token]
	if !ok {
		return nil, nil, false
	}
	return s, s.places[seq], true
}

// Claim implements admission.Record. A CLAIMED token past its life at now
// is ErrNotFound, as it is once Expire has ended it.
func (m *Memory) Claim(ctx context.Context, queue, token string, now time.Time) (admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return admission.Place{}, fmt.Errorf("claim a token of %s: %w", queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, p, ok := m.byToken(queue, token)
	switch {
	case !ok:
		return admission.Place{}, fmt.Errorf("claim a token of %s: %w", queue, admission.ErrNotFound)
	case p.Status == admission.StatusConsumed,
		p.Status == admission.StatusClaimed && !expired(p.ExpiresAt, now):
		return admission.Place{}, fmt.Errorf("claim the token of %s in %s: %w", p.UserID, queue, admission.ErrAlreadyClaimed)
	case p.Status != admission.StatusReady || expired(p.ExpiresAt, now):
		return admission.Place{}, fmt.Errorf("claim the token of %s in %s: %w", p.UserID, queue, admission.ErrNotFound)
	}
	p.ClaimedAt = pgtime.Stamp(now)
	s.set(p, admission.StatusClaimed)
	return *p, nil
}

// Consume implements admission.Record. An unknown token is ErrNotFound; a
// CLAIMED one past its life at now is ErrNotClaimed.
func (m *Memory) Consume(ctx context.Context, queue, token string, now time.Time) (admission.Place, error) {
	return m.settle(ctx, "consume", queue, token, now, func(s *memQueue, p *admission.Place) {
		p.ConsumedAt = pgtime.Stamp(now)
		s.set(p, admission.StatusConsumed)
	})
}

// Release implements admission.Record: the place is READY again, its claim
// forgotten. An unknown token is ErrNotFound; a CLAIMED one past its life
// at now is ErrNotClaimed.
func (m *Memory) Release(ctx context.Context, queue, token string, now time.Time) (admission.Place, error) {
	return m.settle(ctx, "release", queue, token, now, func(s *memQueue, p *admission.Place) {
		p.ClaimedAt = time.Time{}
		s.set(p, admission.StatusReady)
	})
}

// settle applies change to the CLAIMED, unexpired place of token.
func (m *Memory) settle(ctx context.Context, what, queue, token string, now time.Time, change func(*memQueue, *admission.Place)) (admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return admission.Place{}, fmt.Errorf("%s a token of %s: %w", what, queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, p, ok := m.byToken(queue, token)
	switch {
	case !ok:
		return admission.Place{}, fmt.Errorf("%s a token of %s: %w", what, queue, admission.ErrNotFound)
	case p.Status != admission.StatusClaimed || expired(p.ExpiresAt, now):
		return admission.Place{}, fmt.Errorf("%s the token of %s in %s: %w", what, p.UserID, queue, admission.ErrNotClaimed)
	}
	change(s, p)
	return *p, nil
}

// Expire implements admission.Record. The places are ended, and returned,
// in the order their tokens' lives ended (ExpiresAt, then Seq).
func (m *Memory) Expire(ctx context.Context, queue string, now time.Time, limit int) ([]admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("expire tokens of %s: %w", queue, err)
	}
	if err := checkLimit("expire tokens of "+queue, limit); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.queues[queue]
	if !ok {
		return nil, nil
	}
	var due []*admission.Place
	for seq := range s.holding {
		if p := s.places[seq]; expired(p.ExpiresAt, now) {
			due = append(due, p)
		}
	}
	slices.SortFunc(due, func(a, b *admission.Place) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.Seq, b.Seq))
	})
	var out []admission.Place
	for _, p := range due[:min(limit, len(due))] {
		s.set(p, admission.StatusExpired)
		out = append(out, *p)
	}
	return out, nil
}

// Waiting implements admission.Record.
func (m *Memory) Waiting(ctx context.Context, queue string, after int64, limit int) ([]admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("waiting of %s: %w", queue, err)
	}
	if err := checkLimit("waiting of "+queue, limit); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.queues[queue]
	if !ok {
		return nil, nil
	}
	i, found := slices.BinarySearch(s.waiting, after)
	if found {
		i++
	}
	var out []admission.Place
	for _, seq := range s.waiting[i:] {
		if len(out) == limit {
			break
		}
		if p := s.places[seq]; p.Status == admission.StatusWaiting {
			out = append(out, *p)
		}
	}
	return out, nil
}

// SetEpoch implements admission.Record: the recorded epoch only grows, and
// setting the same one again is no change.
func (m *Memory) SetEpoch(ctx context.Context, queue string, epoch int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("set admitter epoch of %s: %w", queue, err)
	}
	if err := checkEpoch(queue, epoch); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.queue(queue)
	if s.epoch > epoch {
		return fmt.Errorf("set admitter epoch of %s: %d is below %d: %w", queue, epoch, s.epoch, admission.ErrStaleEpoch)
	}
	s.epoch = epoch
	return nil
}

// Epoch implements admission.Record: 0 before any.
func (m *Memory) Epoch(ctx context.Context, queue string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("admitter epoch of %s: %w", queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.queues[queue]; ok {
		return s.epoch, nil
	}
	return 0, nil
}

// Admitted implements admission.Record: the places admitted at or after
// since, in (AdmittedAt, Seq) order, whatever they became since.
func (m *Memory) Admitted(ctx context.Context, queue string, since time.Time, limit int) ([]admission.Place, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("admitted to %s: %w", queue, err)
	}
	if err := checkLimit("admitted to "+queue, limit); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.queues[queue]
	if !ok {
		return nil, nil
	}
	since = pgtime.Stamp(since)
	i, _ := slices.BinarySearchFunc(s.admitted, since, func(seq int64, t time.Time) int {
		return cmp.Or(s.places[seq].AdmittedAt.Compare(t), 1) // first at or after since
	})
	var out []admission.Place
	for _, seq := range s.admitted[i:min(i+limit, len(s.admitted))] {
		out = append(out, *s.places[seq])
	}
	return out, nil
}
