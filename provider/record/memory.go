package record

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/provider"
)

// Memory is a provider.Record held in process memory, for the embedded
// single-node default and for tests. One mutex serialises every method,
// which gives it the isolation PostgreSQL's transactions and locks give
// Postgres; it keeps every assignment for the life of the process.
type Memory struct {
	mu   sync.Mutex
	byID map[string]*provider.Assignment
	// The indexes PostgreSQL keeps: the live assignment of each ticket, the
	// live ones of each queue and provider, the offered ones of each queue.
	ticket  map[string]string
	live    map[slot]map[string]struct{}
	offered map[string]map[string]struct{}
	refused map[refusal][]string // the providers that refused each ticket
}

// refusal names a ticket's refusals in one queue.
type refusal struct{ queue, ticket string }

// slot names a provider's slots in one queue.
type slot struct{ queue, provider string }

// NewMemory returns an empty in-memory record.
func NewMemory() *Memory {
	return &Memory{
		byID:    make(map[string]*provider.Assignment),
		ticket:  make(map[string]string),
		live:    make(map[slot]map[string]struct{}),
		offered: make(map[string]map[string]struct{}),
		refused: make(map[refusal][]string),
	}
}

// refuse notes that a's provider refused its ticket.
func (m *Memory) refuse(a *provider.Assignment) {
	k := refusal{a.Queue, a.TicketID}
	if !slices.Contains(m.refused[k], a.Provider) {
		m.refused[k] = append(m.refused[k], a.Provider)
	}
}

// Refused implements provider.Record.
func (m *Memory) Refused(ctx context.Context, queue string, ticketIDs []string) (map[string][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("refused providers in %s: %w", queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for _, t := range ticketIDs {
		id, err := canonicalID("refused: ticket", t)
		if err != nil {
			continue // names no ticket
		}
		if ps := m.refused[refusal{queue, id}]; len(ps) > 0 {
			out[t] = slices.Sorted(slices.Values(ps))
		}
	}
	return out, nil
}

var _ provider.Record = (*Memory)(nil)

// out is a as returned: a copy sharing no map with the record.
func out(a *provider.Assignment) provider.Assignment {
	c := *a
	c.Parts = cloneParts(a.Parts)
	return c
}

// index files a under its status; unindex removes it from the indexes of
// its status. A change of status is unindex, the change, index.
func (m *Memory) index(a *provider.Assignment) {
	if a.Status.Final() {
		return
	}
	m.ticket[a.TicketID] = a.ID
	k := slot{a.Queue, a.Provider}
	if m.live[k] == nil {
		m.live[k] = make(map[string]struct{})
	}
	m.live[k][a.ID] = struct{}{}
	if a.Status == provider.StatusOffered {
		if m.offered[a.Queue] == nil {
			m.offered[a.Queue] = make(map[string]struct{})
		}
		m.offered[a.Queue][a.ID] = struct{}{}
	}
}

func (m *Memory) unindex(a *provider.Assignment) {
	if m.ticket[a.TicketID] == a.ID {
		delete(m.ticket, a.TicketID)
	}
	k := slot{a.Queue, a.Provider}
	delete(m.live[k], a.ID)
	if len(m.live[k]) == 0 {
		delete(m.live, k)
	}
	delete(m.offered[a.Queue], a.ID)
	if len(m.offered[a.Queue]) == 0 {
		delete(m.offered, a.Queue)
	}
}

// Offer implements provider.Record.
func (m *Memory) Offer(ctx context.Context, a provider.Assignment, capacity int) (provider.Assignment, error) {
	if err := ctx.Err(); err != nil {
		return provider.Assignment{}, fmt.Errorf("offer %s: %w", a.ID, err)
	}
	a, err := checkOffer(a, capacity)
	if err != nil {
		return provider.Assignment{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if stored, ok := m.byID[a.ID]; ok {
		return repeat(out(stored), a)
	}
	if _, ok := m.ticket[a.TicketID]; ok {
		return provider.Assignment{}, fmt.Errorf("offer %s of ticket %s: %w", a.ID, a.TicketID, provider.ErrTicketAssigned)
	}
	if held := len(m.live[slot{a.Queue, a.Provider}]); held >= capacity {
		return provider.Assignment{}, fmt.Errorf("offer %s to %s in %s: %d of %d slots held: %w",
			a.ID, a.Provider, a.Queue, held, capacity, provider.ErrOverCapacity)
	}
	stored := &a
	m.byID[a.ID] = stored
	m.index(stored)
	return out(stored), nil
}

// change applies f to the assignment id if ok says its state allows it;
// done says the change was made already (a repeat answered unchanged).
func (m *Memory) change(ctx context.Context, what, id string, now time.Time,
	ok, done func(*provider.Assignment, time.Time) bool, f func(*provider.Assignment, time.Time)) (provider.Assignment, error) {
	if err := ctx.Err(); err != nil {
		return provider.Assignment{}, fmt.Errorf("%s %s: %w", what, id, err)
	}
	id, now, err := checkChange(what, id, now)
	if err != nil {
		return provider.Assignment{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, found := m.byID[id]
	switch {
	case !found:
		return provider.Assignment{}, fmt.Errorf("%s %s: %w", what, id, provider.ErrNotFound)
	case done(a, now):
		return out(a), nil
	case !ok(a, now):
		return provider.Assignment{}, fmt.Errorf("%s %s: %s: %w", what, id, a.Status, provider.ErrConflict)
	}
	m.unindex(a)
	f(a, now)
	a.Version++
	m.index(a)
	return out(a), nil
}

func is(s provider.Status) func(*provider.Assignment, time.Time) bool {
	return func(a *provider.Assignment, _ time.Time) bool { return a.Status == s }
}

// Accept implements provider.Record.
func (m *Memory) Accept(ctx context.Context, id string, now time.Time) (provider.Assignment, error) {
	return m.change(ctx, "accept", id, now,
		func(a *provider.Assignment, now time.Time) bool {
			return a.Status == provider.StatusOffered && open(a.AcceptBy, now)
		},
		is(provider.StatusAccepted),
		func(a *provider.Assignment, now time.Time) { a.Status, a.AcceptedAt = provider.StatusAccepted, now })
}

// Decline implements provider.Record.
func (m *Memory) Decline(ctx context.Context, id string, now time.Time) (provider.Assignment, error) {
	return m.change(ctx, "decline", id, now, is(provider.StatusOffered), is(provider.StatusDeclined),
		func(a *provider.Assignment, now time.Time) {
			a.Status, a.EndedAt, a.EndReason = provider.StatusDeclined, now, reasonDeclined
			m.refuse(a)
		})
}

// End implements provider.Record.
func (m *Memory) End(ctx context.Context, id, reason string, now time.Time) (provider.Assignment, error) {
	if reason == "" {
		return provider.Assignment{}, fmt.Errorf("end %s: no reason", id)
	}
	return m.change(ctx, "end", id, now, is(provider.StatusAccepted), is(provider.StatusEnded),
		func(a *provider.Assignment, now time.Time) {
			a.Status, a.EndedAt, a.EndReason = provider.StatusEnded, now, reason
		})
}

// Expire implements provider.Record. The offers are ended, and returned,
// in the order their windows closed (AcceptBy, then ID).
func (m *Memory) Expire(ctx context.Context, queue string, now time.Time, limit int) ([]provider.Assignment, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("expire offers of %s: %w", queue, err)
	}
	if err := checkExpire(queue, now, limit); err != nil {
		return nil, err
	}
	now = pgtime.Stamp(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []*provider.Assignment
	for id := range m.offered[queue] {
		if a := m.byID[id]; !open(a.AcceptBy, now) {
			due = append(due, a)
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	slices.SortFunc(due, func(a, b *provider.Assignment) int {
		return cmp.Or(a.AcceptBy.Compare(b.AcceptBy), cmp.Compare(a.ID, b.ID))
	})
	res := make([]provider.Assignment, 0, min(limit, len(due)))
	for _, a := range due[:min(limit, len(due))] {
		m.unindex(a)
		a.Status, a.EndedAt, a.EndReason = provider.StatusExpired, now, reasonExpired
		m.refuse(a)
		a.Version++
		res = append(res, out(a))
	}
	return res, nil
}

// Get implements provider.Record.
func (m *Memory) Get(ctx context.Context, id string) (provider.Assignment, error) {
	if err := ctx.Err(); err != nil {
		return provider.Assignment{}, fmt.Errorf("get assignment %s: %w", id, err)
	}
	id, err := canonicalID("get assignment", id)
	if err != nil {
		return provider.Assignment{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.byID[id]
	if !ok {
		return provider.Assignment{}, fmt.Errorf("get assignment %s: %w", id, provider.ErrNotFound)
	}
	return out(a), nil
}

// Live implements provider.Record: the provider's OFFERED and ACCEPTED
// assignments in the queue, by OfferedAt then ID; nil when none.
func (m *Memory) Live(ctx context.Context, queue, providerID string) ([]provider.Assignment, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("live assignments of %s in %s: %w", providerID, queue, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.live[slot{queue, providerID}]
	if len(ids) == 0 {
		return nil, nil
	}
	res := make([]provider.Assignment, 0, len(ids))
	for id := range ids {
		res = append(res, out(m.byID[id]))
	}
	slices.SortFunc(res, byOffer)
	return res, nil
}

func byOffer(a, b provider.Assignment) int {
	return cmp.Or(a.OfferedAt.Compare(b.OfferedAt), cmp.Compare(a.ID, b.ID))
}

// OfferMany implements provider.Record, one Offer after the other.
func (m *Memory) OfferMany(ctx context.Context, offers []provider.OfferRequest) ([]provider.OfferResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("offer %d: %w", len(offers), err)
	}
	out := make([]provider.OfferResult, len(offers))
	for i, o := range offers {
		out[i].Assignment, out[i].Err = m.Offer(ctx, o.Assignment, o.Capacity)
	}
	return out, nil
}
