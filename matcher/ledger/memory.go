package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Memory is a matcher.Ledger held in process memory, for the embedded
// single-node default and for tests. One mutex serialises every method, which
// gives it the isolation PostgreSQL's transactions give Postgres. It keeps
// every ticket and match for the life of the process unless told to Forget
// what resolved.
type Memory struct {
	mu sync.Mutex

	tickets map[string]matcher.Ticket
	matches map[string]matcher.Match
	// users holds what the record keeps of each user (memUser), in one
	// map where three took a lookup each on every join.
	users map[string]*memUser
	// waiting holds the WAITING tickets of each partition, for Waiting.
	waiting map[matcher.Partition]map[string]struct{}

	outbox    []matcher.Event // ascending ID
	lastEvent int64
	// inFlight marks events handed to a DrainOutbox callback that has not
	// returned, the equivalent of PostgreSQL's row locks with SKIP LOCKED.
	inFlight map[int64]struct{}

	epochs map[string]int64 // partition → lease epoch

	// pending holds the PENDING_ACCEPT matches of each (queue, region).
	pending map[matcher.Partition]map[string]struct{}

	// now stamps outbox events and judges their age, as PostgreSQL's now()
	// does in Postgres.
	now func() time.Time

	// final lists, in the order they were made, the tickets and matches
	// that reached a state they never leave, for Forget; from finalHead on.
	final     []finalRec
	finalHead int

	// ids, goneT and goneM are sets CommitMatches and Forget fill and
	// empty under the lock, kept to spare their allocations.
	ids          map[string]bool
	goneT, goneM map[string]bool
}

// memUser is a user's part of the indexes: its WAITING ticket (the unique
// partial index), the PENDING_ACCEPT match it is seated in, each "" when
// none, and every ticket of it kept, for UserState. A user with none of
// them has no memUser.
type memUser struct {
	waiting, pending string
	tickets          []string
	// first holds tickets while a user has one, as most have: a user is
	// then one allocation.
	first [1]string
}

// user is userID's memUser, nil when it has none.
func (l *Memory) user(userID string) *memUser { return l.users[userID] }

// userOf is userID's memUser, made when it has none.
func (l *Memory) userOf(userID string) *memUser {
	u := l.users[userID]
	if u == nil {
		u = &memUser{}
		u.tickets = u.first[:0]
		l.users[userID] = u
	}
	return u
}

// tidy drops u, userID's, once it holds nothing.
func (l *Memory) tidy(userID string, u *memUser) {
	if u.waiting == "" && u.pending == "" && len(u.tickets) == 0 {
		delete(l.users, userID)
	}
}

// ticketsOf lists every ticket kept of userID.
func (l *Memory) ticketsOf(userID string) []string {
	if u := l.users[userID]; u != nil {
		return u.tickets
	}
	return nil
}

// finalRec is a ticket or a match (ticket "") that became final at at.
type finalRec struct {
	at            time.Time
	ticket, match string
}

// NewMemory returns an empty in-memory ledger on the wall clock.
func NewMemory() *Memory { return NewMemoryAt(time.Now) }

// NewMemoryAt returns an empty in-memory ledger whose outbox is stamped and
// aged by now.
func NewMemoryAt(now func() time.Time) *Memory {
	return &Memory{
		now:      now,
		tickets:  make(map[string]matcher.Ticket),
		matches:  make(map[string]matcher.Match),
		users:    make(map[string]*memUser),
		waiting:  make(map[matcher.Partition]map[string]struct{}),
		inFlight: make(map[int64]struct{}),
		epochs:   make(map[string]int64),
		pending:  make(map[matcher.Partition]map[string]struct{}),
		ids:      make(map[string]bool),
		goneT:    make(map[string]bool),
		goneM:    make(map[string]bool),
	}
}

var _ matcher.Ledger = (*Memory)(nil)

// CreateTicket implements matcher.Ledger.
func (l *Memory) CreateTicket(ctx context.Context, t matcher.Ticket) (matcher.Ticket, error) {
	if err := ctx.Err(); err != nil {
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: %w", t.ID, err)
	}
	t, err := newTicket(t)
	if err != nil {
		return matcher.Ticket{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.user(t.UserID)
	if u != nil && u.waiting != "" {
		return matcher.Ticket{}, &matcher.AlreadyQueuedError{Existing: cloneTicket(l.tickets[u.waiting])}
	}
	if u != nil && u.pending != "" {
		return matcher.Ticket{}, &matcher.AlreadyMatchedError{UserID: t.UserID, MatchID: u.pending}
	}
	if _, ok := l.tickets[t.ID]; ok {
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: %w", t.ID, errIDInUse)
	}
	l.tickets[t.ID] = t
	if u == nil {
		u = &memUser{}
		u.tickets = u.first[:0]
		l.users[t.UserID] = u
	}
	u.tickets = append(u.tickets, t.ID)
	l.enterWaiting(t, u)
	return cloneTicket(t), nil
}

// Ticket implements matcher.Ledger.
func (l *Memory) Ticket(ctx context.Context, id string) (matcher.Ticket, error) {
	if err := ctx.Err(); err != nil {
		return matcher.Ticket{}, fmt.Errorf("ticket %s: %w", id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ticket(id)
}

func (l *Memory) ticket(id string) (matcher.Ticket, error) {
	cid, _ := canonicalID(id)
	t, ok := l.tickets[cid]
	if !ok {
		return matcher.Ticket{}, fmt.Errorf("ticket %s: %w", id, matcher.ErrNotFound)
	}
	return cloneTicket(t), nil
}

// Match implements matcher.Ledger.
func (l *Memory) Match(ctx context.Context, id string) (matcher.Match, error) {
	if err := ctx.Err(); err != nil {
		return matcher.Match{}, fmt.Errorf("match %s: %w", id, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cid, _ := canonicalID(id)
	m, ok := l.matches[cid]
	if !ok {
		return matcher.Match{}, fmt.Errorf("match %s: %w", id, matcher.ErrNotFound)
	}
	return cloneMatch(m), nil
}

// UserState implements matcher.Ledger.
func (l *Memory) UserState(ctx context.Context, userID string, since time.Time, limit int) (matcher.TicketPage, error) {
	if err := ctx.Err(); err != nil {
		return matcher.TicketPage{}, fmt.Errorf("user state %s: %w", userID, err)
	}
	since = stamp(since)
	l.mu.Lock()
	defer l.mu.Unlock()
	var live, resolved []matcher.Ticket
	for _, id := range l.ticketsOf(userID) {
		t := l.tickets[id]
		if t.Status == matcher.StatusWaiting {
			live = append(live, t)
			continue
		}
		if t.UpdatedAt.Before(since) {
			continue
		}
		resolved = append(resolved, t)
		if t.Status == matcher.StatusMatched {
			if st := l.matches[t.MatchID].State; st == matcher.MatchPendingAccept || st == matcher.MatchReady {
				live = append(live, t)
			}
		}
	}
	slices.SortFunc(live, newestFirst)
	slices.SortFunc(resolved, newestFirst)
	live = live[:min(len(live), limit)]
	var page matcher.TicketPage
	if len(resolved) > limit {
		resolved, page.More = resolved[:limit], true
	}
	if len(resolved) > 0 {
		last := resolved[len(resolved)-1]
		page.Next = matcher.TicketCursor{At: last.UpdatedAt, ID: last.ID}
	}
	seen := make(map[string]bool)
	for _, t := range append(live, resolved...) {
		if seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		page.Tickets = append(page.Tickets, cloneTicket(t))
	}
	slices.SortFunc(page.Tickets, ticketOrder)
	page.Matches = l.matchesOf(page.Tickets)
	return page, nil
}

// UserTickets implements matcher.Ledger.
func (l *Memory) UserTickets(ctx context.Context, userID string, before matcher.TicketCursor, limit int) (matcher.TicketPage, error) {
	if err := ctx.Err(); err != nil {
		return matcher.TicketPage{}, fmt.Errorf("tickets of %s: %w", userID, err)
	}
	if !before.IsZero() {
		id, ok := canonicalID(before.ID)
		if !ok {
			return matcher.TicketPage{}, fmt.Errorf("tickets of %s: cursor id %q is not a uuid", userID, before.ID)
		}
		before = matcher.TicketCursor{At: stamp(before.At), ID: id}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var resolved []matcher.Ticket
	for _, id := range l.ticketsOf(userID) {
		t := l.tickets[id]
		if t.Status == matcher.StatusWaiting {
			continue
		}
		if !before.IsZero() && newestFirst(t, matcher.Ticket{UpdatedAt: before.At, ID: before.ID}) <= 0 {
			continue // not strictly older than the cursor
		}
		resolved = append(resolved, t)
	}
	slices.SortFunc(resolved, newestFirst)
	var page matcher.TicketPage
	if len(resolved) > limit {
		resolved, page.More = resolved[:limit], true
	}
	for _, t := range resolved {
		page.Tickets = append(page.Tickets, cloneTicket(t))
	}
	if len(resolved) > 0 {
		last := resolved[len(resolved)-1]
		page.Next = matcher.TicketCursor{At: last.UpdatedAt, ID: last.ID}
	}
	page.Matches = l.matchesOf(page.Tickets)
	return page, nil
}

// matchesOf returns the matches of tickets, in matchOrder. l.mu is held.
func (l *Memory) matchesOf(tickets []matcher.Ticket) []matcher.Match {
	var matches []matcher.Match
	seen := make(map[string]bool)
	for _, t := range tickets {
		if t.MatchID != "" && !seen[t.MatchID] {
			seen[t.MatchID] = true
			matches = append(matches, cloneMatch(l.matches[t.MatchID]))
		}
	}
	slices.SortFunc(matches, matchOrder)
	return matches
}

// newestFirst is the order of a user's resolved tickets in pages: latest
// update first, then id, descending (as PostgreSQL sorts uuid values).
func newestFirst(a, b matcher.Ticket) int {
	if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// Resolve implements matcher.Ledger.
func (l *Memory) Resolve(ctx context.Context, id string, status matcher.TicketStatus, reason string, at time.Time) (matcher.Ticket, []matcher.Event, error) {
	if err := ctx.Err(); err != nil {
		return matcher.Ticket{}, nil, fmt.Errorf("resolve ticket %s: %w", id, err)
	}
	if err := checkResolve(id, status); err != nil {
		return matcher.Ticket{}, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, err := l.ticket(id)
	if err != nil {
		return matcher.Ticket{}, nil, fmt.Errorf("resolve %w", err)
	}
	if t.Status != matcher.StatusWaiting {
		return matcher.Ticket{}, nil, &matcher.NotWaitingError{Ticket: t}
	}
	t.Status = status
	t.CancelReason = reason
	t.UpdatedAt = stamp(at)
	t.Version++
	l.tickets[t.ID] = t
	l.leaveWaiting(t)
	l.addFinal(finalRec{at: t.UpdatedAt, ticket: t.ID})
	e := l.appendEvent(matcher.TicketUpdatedEvent(t))
	return cloneTicket(t), []matcher.Event{e}, nil
}

// leaveWaiting drops t, no longer WAITING, from the waiting indexes.
func (l *Memory) leaveWaiting(t matcher.Ticket) {
	if u := l.user(t.UserID); u != nil {
		u.waiting = ""
		l.tidy(t.UserID, u)
	}
	p := t.Partition()
	w := l.waiting[p]
	delete(w, t.ID)
	if len(w) == 0 {
		delete(l.waiting, p)
	}
}

// appendEvent writes e to the outbox, stamped with the ledger's clock as
// PostgreSQL stamps it with now(), and returns a copy for the caller.
func (l *Memory) appendEvent(e matcher.Event) matcher.Event {
	l.lastEvent++
	e.ID = l.lastEvent
	e.CreatedAt = stamp(l.now())
	l.outbox = append(l.outbox, e)
	return cloneEvent(e)
}

// CommitMatches implements matcher.Ledger: the whole batch under one lock,
// the batch refused before anything is written when any match is invalid or
// reuses an id, as the PostgreSQL transaction would roll back. Each match is
// checked in the order PostgreSQL checks (epoch, tickets, match id) so that
// both report the same error when several apply.
func (l *Memory) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("commit %d matches: %w", len(ms), err)
	}
	valid := make([]matcher.Match, len(ms))
	for i, m := range ms {
		m, err := newMatch(m)
		if err != nil {
			return nil, err
		}
		valid[i] = m
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := l.ids
	defer clear(ids)
	for _, m := range valid {
		// PostgreSQL fails on the insert, after the checks that pass over it.
		_, taken := l.matches[m.ID]
		if (taken || ids[m.ID]) && l.checkEpoch(m, epoch) == nil && l.checkSeats(m) == nil {
			return nil, fmt.Errorf("commit match %s: %w", m.ID, errIDInUse)
		}
		ids[m.ID] = true
	}
	out := make([]matcher.CommitResult, len(valid))
	// The batch's events in one storage, each match's its own part of it.
	events := make([]matcher.Event, 0, len(valid))
	for i, m := range valid {
		if err := l.checkEpoch(m, epoch); err != nil {
			out[i].Err = err
			continue
		}
		switch err := l.checkSeats(m); {
		case errors.Is(err, errAlreadyCommitted):
		case err != nil:
			out[i].Err = err
		default:
			from := len(events)
			events = append(events, l.commit(m))
			out[i].Events = events[from:len(events):len(events)]
		}
	}
	return out, nil
}

func (l *Memory) checkEpoch(m matcher.Match, epoch int64) error {
	if epoch > 0 && l.epochs[partitionOf(m)] != epoch {
		return fmt.Errorf("commit match %s: epoch %d of %s: %w", m.ID, epoch, partitionOf(m), matcher.ErrStaleEpoch)
	}
	return nil
}

// seatedIn reports whether every player of m is already seated in m.
func (l *Memory) seatedIn(m matcher.Match) bool {
	for _, p := range m.Players {
		if t, ok := l.tickets[p.TicketID]; !ok || t.MatchID != m.ID {
			return false
		}
	}
	return true
}

// allWaiting reports whether every ticket of m is WAITING: the commit's
// usual case, checked without building the list a shortfall reports.
func (l *Memory) allWaiting(m matcher.Match) bool {
	for _, p := range m.Players {
		if t, ok := l.tickets[p.TicketID]; !ok || t.Status != matcher.StatusWaiting {
			return false
		}
	}
	return true
}

// errAlreadyCommitted marks a commit retried after it was made: a success
// that writes nothing.
var errAlreadyCommitted = errors.New("already committed")

// checkSeats returns errAlreadyCommitted when m is a retry of a commit that
// was made, *ShortfallError when not every ticket is WAITING, else nil.
func (l *Memory) checkSeats(m matcher.Match) error {
	if l.allWaiting(m) {
		return nil
	}
	var waiting []string
	for _, p := range m.Players {
		if t, ok := l.tickets[p.TicketID]; ok && t.Status == matcher.StatusWaiting {
			waiting = append(waiting, t.ID)
		}
	}
	if l.seatedIn(m) {
		return errAlreadyCommitted
	}
	slices.Sort(waiting)
	if waiting == nil {
		waiting = []string{}
	}
	return &matcher.ShortfallError{Waiting: waiting}
}

// commit writes m, whose tickets are all WAITING, and its match.found
// event, which it returns.
func (l *Memory) commit(m matcher.Match) matcher.Event {
	m.Shard = "" // names the lease only; not part of the record
	l.matches[m.ID] = m
	if m.State == matcher.MatchPendingAccept {
		l.setPending(m, true)
	}
	for _, p := range m.Players {
		t := l.tickets[p.TicketID]
		t.Status = matcher.StatusMatched
		t.MatchID = m.ID
		t.UpdatedAt = m.CreatedAt
		t.Version++
		l.tickets[t.ID] = t
		l.leaveWaiting(t)
	}
	if m.State != matcher.MatchPendingAccept {
		l.finalMatch(m, stamp(m.CreatedAt))
	}
	return l.appendEvent(matcher.MatchFoundEvent(m))
}

// setPending adds m to, or drops it from, the pending index.
func (l *Memory) setPending(m matcher.Match, on bool) {
	p := matcher.Partition{Queue: m.Queue, Region: m.Region}
	for _, id := range m.UserIDs() {
		if on {
			l.userOf(id).pending = m.ID
		} else if u := l.user(id); u != nil && u.pending == m.ID {
			u.pending = ""
			l.tidy(id, u)
		}
	}
	if on {
		if l.pending[p] == nil {
			l.pending[p] = make(map[string]struct{})
		}
		l.pending[p][m.ID] = struct{}{}
		return
	}
	delete(l.pending[p], m.ID)
	if len(l.pending[p]) == 0 {
		delete(l.pending, p)
	}
}

// Accept implements matcher.Ledger.
func (l *Memory) Accept(ctx context.Context, matchID, userID string, at time.Time) (matcher.Match, []matcher.Event, error) {
	if err := ctx.Err(); err != nil {
		return matcher.Match{}, nil, fmt.Errorf("accept match %s: %w", matchID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cid, _ := canonicalID(matchID)
	m, ok := l.matches[cid]
	if !ok {
		return matcher.Match{}, nil, fmt.Errorf("accept match %s: %w", matchID, matcher.ErrNotFound)
	}
	m, changed, err := accept(cloneMatch(m), userID, at)
	if err != nil {
		return matcher.Match{}, nil, err
	}
	if !changed {
		return cloneMatch(m), nil, nil
	}
	l.matches[m.ID] = m
	var events []matcher.Event
	if m.State == matcher.MatchReady {
		l.setPending(m, false)
		l.finalMatch(m, stamp(at))
		events = append(events, l.appendEvent(matcher.MatchReadyEvent(m)))
	}
	return cloneMatch(m), events, nil
}

// Dissolve implements matcher.Ledger.
func (l *Memory) Dissolve(ctx context.Context, req matcher.DissolveRequest) (matcher.Dissolution, []matcher.Event, error) {
	if err := ctx.Err(); err != nil {
		return matcher.Dissolution{}, nil, fmt.Errorf("dissolve match %s: %w", req.MatchID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cid, _ := canonicalID(req.MatchID)
	m, ok := l.matches[cid]
	if !ok {
		return matcher.Dissolution{}, nil, fmt.Errorf("dissolve match %s: %w", req.MatchID, matcher.ErrNotFound)
	}
	plan, err := dissolvePlan(cloneMatch(m), req)
	if err != nil {
		return matcher.Dissolution{}, nil, err
	}
	m.State = matcher.MatchDissolved
	m.Version++
	l.matches[m.ID] = m
	l.setPending(m, false)
	d := matcher.Dissolution{Match: cloneMatch(m)}
	for _, p := range m.Players {
		t, ok := l.tickets[p.TicketID]
		if !ok || t.Status != matcher.StatusMatched || t.MatchID != m.ID {
			continue
		}
		reason := plan[t.ID]
		if u := l.user(t.UserID); u != nil && u.waiting != "" && reason == "" {
			reason = matcher.ReasonSuperseded
		}
		t = dissolveTicket(t, reason, req.At)
		l.tickets[t.ID] = t
		if t.Status == matcher.StatusWaiting {
			l.enterWaiting(t, nil)
			d.Requeued = append(d.Requeued, cloneTicket(t))
		} else {
			d.Cancelled = append(d.Cancelled, cloneTicket(t))
			l.addFinal(finalRec{at: t.UpdatedAt, ticket: t.ID})
		}
	}
	l.addFinal(finalRec{at: stamp(req.At), match: m.ID})
	var events []matcher.Event
	for _, e := range dissolveEvents(d, req.Reason()) {
		events = append(events, l.appendEvent(e))
	}
	return d, events, nil
}

// finalMatch notes that m, no longer waiting for accepts, and its tickets
// became final at at.
func (l *Memory) finalMatch(m matcher.Match, at time.Time) {
	for _, p := range m.Players {
		l.addFinal(finalRec{at: at, ticket: p.TicketID, match: m.ID})
	}
	l.addFinal(finalRec{at: at, match: m.ID})
}

// addFinal notes r in final. When final is full and a quarter of it or
// more was forgotten, what is left moves to its start first, rather than
// into a larger copy: a record that forgets as it goes then stops
// growing it.
func (l *Memory) addFinal(r finalRec) {
	if len(l.final) == cap(l.final) && l.finalHead > 0 && 4*l.finalHead >= len(l.final) {
		n := copy(l.final, l.final[l.finalHead:])
		clear(l.final[n:])
		l.final, l.finalHead = l.final[:n], 0
	}
	l.final = append(l.final, r)
}

// Forget drops what became final before before: tickets no longer WAITING
// and not seated in a match waiting for accepts, matches no longer waiting
// for accepts once no ticket kept names them, their places in their users'
// history, and their events still in the outbox (but those a drain holds).
// What is forgotten is as if it never was: reads find nothing, a user's
// history goes without it, and a commit retried after it is refused. It
// goes through them in the order they became final, so one stamped before
// one made earlier may stay until that one goes. A long-running record
// calls it to bound its memory; it returns how many tickets and matches
// went.
func (l *Memory) Forget(before time.Time) (tickets, matches int) {
	before = stamp(before)
	l.mu.Lock()
	defer l.mu.Unlock()
	goneT, goneM := l.goneT, l.goneM
	defer clear(goneT)
	defer clear(goneM)
	for l.finalHead < len(l.final) && l.final[l.finalHead].at.Before(before) {
		r := l.final[l.finalHead]
		l.final[l.finalHead] = finalRec{}
		l.finalHead++
		if r.ticket != "" {
			if t, ok := l.tickets[r.ticket]; ok && l.finalTicket(t) {
				l.forgetTicket(t)
				goneT[t.ID] = true
			}
		}
		if r.match != "" {
			if m, ok := l.matches[r.match]; ok && m.State != matcher.MatchPendingAccept && !l.named(m) {
				delete(l.matches, m.ID)
				goneM[m.ID] = true
			}
		}
	}
	if l.finalHead > len(l.final)/2 {
		l.final = append(l.final[:0], l.final[l.finalHead:]...)
		l.finalHead = 0
	}
	if len(goneT)+len(goneM) > 0 {
		l.outbox = slices.DeleteFunc(l.outbox, func(e matcher.Event) bool {
			if _, busy := l.inFlight[e.ID]; busy {
				return false
			}
			if e.Kind == matcher.EventTicketUpdated {
				return goneT[e.Ticket.ID]
			}
			return goneM[e.Match.ID]
		})
	}
	return len(goneT), len(goneM)
}

// finalTicket reports whether t is in a state it never leaves.
func (l *Memory) finalTicket(t matcher.Ticket) bool {
	if t.Status == matcher.StatusWaiting {
		return false
	}
	m, ok := l.matches[t.MatchID]
	return t.MatchID == "" || !ok || m.State != matcher.MatchPendingAccept
}

// named reports whether a ticket kept is seated in m.
func (l *Memory) named(m matcher.Match) bool {
	for _, p := range m.Players {
		if t, ok := l.tickets[p.TicketID]; ok && t.MatchID == m.ID {
			return true
		}
	}
	return false
}

// forgetTicket drops t from the record and from its user's history.
func (l *Memory) forgetTicket(t matcher.Ticket) {
	delete(l.tickets, t.ID)
	u := l.user(t.UserID)
	if u == nil {
		return
	}
	if u.tickets = slices.DeleteFunc(u.tickets, func(id string) bool { return id == t.ID }); len(u.tickets) == 0 {
		u.tickets = u.first[:0]
	}
	l.tidy(t.UserID, u)
}

// enterWaiting adds t, WAITING again, to the waiting indexes; u is its
// user's memUser, nil to look it up.
func (l *Memory) enterWaiting(t matcher.Ticket, u *memUser) {
	if u == nil {
		u = l.userOf(t.UserID)
	}
	u.waiting = t.ID
	p := t.Partition()
	w := l.waiting[p]
	if w == nil {
		w = make(map[string]struct{})
		l.waiting[p] = w
	}
	w[t.ID] = struct{}{}
}

// Pending implements matcher.Ledger.
func (l *Memory) Pending(ctx context.Context, p matcher.Partition) ([]matcher.Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pending %s: %w", p, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []matcher.Match
	for id := range l.pending[p.Base()] {
		out = append(out, cloneMatch(l.matches[id]))
	}
	slices.SortFunc(out, pendingOrder)
	return out, nil
}

// Waiting implements matcher.Ledger.
func (l *Memory) Waiting(ctx context.Context, p matcher.Partition) ([]matcher.Ticket, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("waiting %s: %w", p, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []matcher.Ticket
	for id := range l.waiting[p.Base()] {
		out = append(out, cloneTicket(l.tickets[id]))
	}
	slices.SortFunc(out, ticketOrder)
	return out, nil
}

// LivePartitions implements matcher.Ledger.
func (l *Memory) LivePartitions(ctx context.Context) ([]matcher.Partition, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("live partitions: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []matcher.Partition
	for p := range l.waiting {
		out = append(out, p)
	}
	for p := range l.pending {
		if _, ok := l.waiting[p]; !ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, partitionOrder)
	return out, nil
}

// DrainOutbox implements matcher.Ledger. The lock is not held while fn runs:
// fn publishes over the network, and a concurrent drain must be able to take
// the next events meanwhile. The events handed out are marked in flight
// instead, and a concurrent drain skips them.
func (l *Memory) DrainOutbox(ctx context.Context, minAge time.Duration, limit int, fn func([]matcher.Event) error) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("drain outbox: %w", err)
	}
	if limit <= 0 {
		limit = defaultDrainLimit
	}
	l.mu.Lock()
	before := stamp(l.now().Add(-minAge))
	ready := func(e matcher.Event) bool {
		_, busy := l.inFlight[e.ID]
		return !busy && e.CreatedAt.Before(before)
	}
	// Counted first, so that the batch is allocated once at its size: a
	// drain may take the whole outbox.
	n := 0
	for i := range l.outbox {
		if n == limit {
			break
		}
		if ready(l.outbox[i]) {
			n++
		}
	}
	batch := make([]matcher.Event, 0, n)
	for i := range l.outbox {
		if len(batch) == n {
			break
		}
		if e := &l.outbox[i]; ready(*e) {
			l.inFlight[e.ID] = struct{}{}
			batch = append(batch, cloneEvent(*e))
		}
	}
	l.mu.Unlock()
	if len(batch) == 0 {
		return 0, nil
	}

	ok := false
	defer func() { // also when fn panics: the events go back to the outbox
		l.mu.Lock()
		defer l.mu.Unlock()
		for i := range batch {
			delete(l.inFlight, batch[i].ID)
		}
		if ok {
			// The batch is in the outbox's order: ascending ID.
			l.outbox = slices.DeleteFunc(l.outbox, func(e matcher.Event) bool {
				_, found := slices.BinarySearchFunc(batch, e.ID, func(b matcher.Event, id int64) int { return cmp.Compare(b.ID, id) })
				return found
			})
		}
	}()
	if err := fn(batch); err != nil {
		return len(batch), fmt.Errorf("drain outbox: %w", err)
	}
	ok = true
	return len(batch), nil
}

// DeleteEvents implements matcher.Ledger.
func (l *Memory) DeleteEvents(ctx context.Context, ids []int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete events: %w", err)
	}
	del := make(map[int64]bool, len(ids))
	for _, id := range ids {
		del[id] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outbox = slices.DeleteFunc(l.outbox, func(e matcher.Event) bool { return del[e.ID] })
	return nil
}

// Ping implements matcher.Ledger.
func (l *Memory) Ping(ctx context.Context) error { return ctx.Err() }

// LeaseEpoch returns the partition's recorded epoch, 0 when it has none.
func (l *Memory) LeaseEpoch(ctx context.Context, partition string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("lease epoch %s: %w", partition, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs[partition], nil
}

// SetLeaseEpoch records the fencing epoch of the partition's new owner;
// CommitMatches then refuses every other epoch. An epoch not above the
// recorded one is refused with an error wrapping matcher.ErrStaleEpoch: the
// caller lost a race for the lease, or another acquisition was handed the
// same token (a Redis that lost its fencing counter).
func (l *Memory) SetLeaseEpoch(ctx context.Context, partition string, epoch int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("set lease epoch %s: %w", partition, err)
	}
	if epoch <= 0 {
		return fmt.Errorf("set lease epoch %s: epoch %d must be positive", partition, epoch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur := l.epochs[partition]; cur >= epoch {
		return fmt.Errorf("set lease epoch %s: %d is not above %d: %w", partition, epoch, cur, matcher.ErrStaleEpoch)
	}
	l.epochs[partition] = epoch
	return nil
}
