package ledger

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/matcher"
)

// Both implementations pass every input through the functions of this file
// before touching storage, so that they accept and refuse the same values and
// return identical records.

// defaultDrainLimit is the batch size DrainOutbox uses when limit <= 0.
const defaultDrainLimit = 100

// createTicketAttempts bounds the retries of CreateTicket when the user's
// WAITING ticket is resolved between the refused insert and the read of it.
const createTicketAttempts = 3

// errIDInUse is the cause when a ticket id is reused for a new ticket.
var errIDInUse = errors.New("id already used")

// stamp returns t as PostgreSQL stores a timestamptz: UTC, microseconds.
// Memory applies it too, so both ledgers hand back equal times.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// canonicalID parses a uuid in any form PostgreSQL accepts and returns it in
// the form PostgreSQL prints (lower case, hyphenated).
func canonicalID(id string) (string, bool) {
	// The ids matchgate mints are canonical already: a commit checks a few
	// per match, and parsing and printing each again was a tenth of the
	// in-memory record's commit.
	if isCanonicalID(id) {
		return id, true
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// isCanonicalID reports whether id is a uuid in the form canonicalID
// returns: 36 characters, lower-case hex with hyphens at 8, 13, 18 and 23.
func isCanonicalID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// newTicket checks a ticket about to be created and returns it as it will be
// stored: WAITING, version 1, updated when enqueued.
func newTicket(t matcher.Ticket) (matcher.Ticket, error) {
	id, ok := canonicalID(t.ID)
	if !ok {
		return matcher.Ticket{}, fmt.Errorf("create ticket: invalid id %q", t.ID)
	}
	switch {
	case t.UserID == "" || t.Queue == "" || t.Region == "":
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: user, queue and region are required", id)
	case t.Status != "" && t.Status != matcher.StatusWaiting:
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: a new ticket is WAITING, not %s", id, t.Status)
	case !finite(t.Skill):
		// NaN and ±Inf have no JSON form: the ticket could never be pushed.
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: skill %v is not a number", id, t.Skill)
	case !finite(t.Activity):
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: activity %v is not a number", id, t.Activity)
	case t.HeadStart < 0:
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: negative head start %s", id, t.HeadStart)
	case t.Name != matcher.CleanName(t.Name):
		// Cleaned where it comes in (the service's join): the record
		// refuses one that was not rather than clean it a second way.
		return matcher.Ticket{}, fmt.Errorf("create ticket %s: name %q is not a clean display name", id, t.Name)
	}
	t.ID = id
	t.Status = matcher.StatusWaiting
	t.Attributes = cloneAttributes(t.Attributes)
	t.EnqueuedAt = stamp(t.EnqueuedAt)
	t.HeadStart = t.HeadStart.Truncate(time.Millisecond) // stored as head_start_ms
	t.Deadline = stamp(t.Deadline)
	t.MatchID = ""
	t.CancelReason = ""
	t.UpdatedAt = t.EnqueuedAt
	t.Version = 1
	return t, nil
}

// checkResolve refuses a transition Resolve does not make.
func checkResolve(id string, status matcher.TicketStatus) error {
	if status != matcher.StatusCancelled && status != matcher.StatusExpired {
		return fmt.Errorf("resolve ticket %s: status must be CANCELLED or EXPIRED, not %q", id, status)
	}
	return nil
}

// newMatch checks a match about to be committed and returns it as it will be
// stored, with its tickets' ids in canonical form.
func newMatch(m matcher.Match) (matcher.Match, error) {
	id, ok := canonicalID(m.ID)
	if !ok {
		return matcher.Match{}, fmt.Errorf("commit match: invalid id %q", m.ID)
	}
	switch {
	case m.Queue == "" || m.Region == "":
		return matcher.Match{}, fmt.Errorf("commit match %s: queue and region are required", id)
	case len(m.Players) == 0:
		return matcher.Match{}, fmt.Errorf("commit match %s: no players", id)
	case !finite(m.Spread):
		return matcher.Match{}, fmt.Errorf("commit match %s: spread %v is not a number", id, m.Spread)
	case m.Bots < 0:
		return matcher.Match{}, fmt.Errorf("commit match %s: negative bots %d", id, m.Bots)
	case m.Version < 0:
		return matcher.Match{}, fmt.Errorf("commit match %s: negative version %d", id, m.Version)
	}
	players := make([]matcher.Player, len(m.Players))
	for i, p := range m.Players {
		tid, ok := canonicalID(p.TicketID)
		// The seats before this one, by a scan: a match has a few, and two
		// maps a match were a tenth of the in-memory record's commit.
		before := players[:i]
		switch {
		case !ok:
			return matcher.Match{}, fmt.Errorf("commit match %s: invalid ticket id %q", id, p.TicketID)
		case p.UserID == "":
			return matcher.Match{}, fmt.Errorf("commit match %s: ticket %s has no user", id, tid)
		case slices.ContainsFunc(before, func(o matcher.Player) bool { return o.TicketID == tid }):
			return matcher.Match{}, fmt.Errorf("commit match %s: ticket %s seated twice", id, tid)
		case slices.ContainsFunc(before, func(o matcher.Player) bool { return o.UserID == p.UserID }):
			// ARCHITECTURE.md §7.2: a match never contains the same user twice.
			return matcher.Match{}, fmt.Errorf("commit match %s: user %s seated twice", id, p.UserID)
		case !finite(p.Skill):
			return matcher.Match{}, fmt.Errorf("commit match %s: skill %v of ticket %s is not a number", id, p.Skill, tid)
		}
		p.TicketID = tid
		players[i] = p
	}
	if m.Provider != nil {
		seat, err := newProviderSeat(id, m)
		if err != nil {
			return matcher.Match{}, err
		}
		m.Provider = seat
	}
	m.ID = id
	m.Players = players
	if m.Server != nil {
		s := *m.Server
		m.Server = &s
	}
	if m.AcceptBy != nil {
		at := stamp(*m.AcceptBy)
		m.AcceptBy = &at
	}
	m.CreatedAt = stamp(m.CreatedAt)
	if m.Version == 0 {
		m.Version = 1
	}
	// A new match has no accepts yet; Accept is the only writer.
	m.Accepted = nil
	return m, nil
}

// newProviderSeat checks the provider seat of match id (m as given) and
// returns it as it will be stored: its parts copied, none as nil (how the
// jsonb column, which omits them, reads back).
func newProviderSeat(id string, m matcher.Match) (*matcher.ProviderSeat, error) {
	p := *m.Provider
	switch {
	case p.UserID == "":
		return nil, fmt.Errorf("commit match %s: provider has no user", id)
	case m.Seated(p.UserID):
		return nil, fmt.Errorf("commit match %s: provider %s is seated as a player", id, p.UserID)
	case len(m.Players) != 1:
		// A provider match gives one requester to one provider.
		return nil, fmt.Errorf("commit match %s: a provider match has one player, not %d", id, len(m.Players))
	case !finite(p.Score):
		return nil, fmt.Errorf("commit match %s: provider score %v is not a number", id, p.Score)
	}
	for k, v := range p.Parts {
		if !finite(v) {
			return nil, fmt.Errorf("commit match %s: provider part %q %v is not a number", id, k, v)
		}
	}
	p.Parts = cloneParts(p.Parts)
	return &p, nil
}

// partitionOf names the lease a match is committed under: the sub-pool of a
// sharded queue, else the (queue, region).
func partitionOf(m matcher.Match) string {
	return matcher.Partition{Queue: m.Queue, Region: m.Region, Shard: m.Shard}.String()
}

// accept applies userID's acceptance at `at` to m (as stored) and reports
// whether anything changed. The rules are the contract of Ledger.Accept.
func accept(m matcher.Match, userID string, at time.Time) (matcher.Match, bool, error) {
	if !m.Acceptor(userID) {
		if m.Provider != nil && m.Seated(userID) {
			return matcher.Match{}, false, fmt.Errorf("accept match %s: user %s is its requester, not its provider: %w",
				m.ID, userID, matcher.ErrNotFound)
		}
		return matcher.Match{}, false, fmt.Errorf("accept match %s: user %s is not seated: %w", m.ID, userID, matcher.ErrNotFound)
	}
	if m.State != matcher.MatchPendingAccept {
		return matcher.Match{}, false, &matcher.MatchStateError{Match: m, Reason: "it has no open accept window"}
	}
	if m.AcceptBy == nil || !stamp(at).Before(*m.AcceptBy) {
		return matcher.Match{}, false, &matcher.MatchStateError{Match: m, Reason: "its accept window has closed"}
	}
	if m.HasAccepted(userID) {
		return m, false, nil
	}
	m.Accepted = append(slices.Clone(m.Accepted), userID)
	// A provider match waits for its provider only.
	if m.Provider != nil || len(m.Accepted) == len(m.Players) {
		m.State = matcher.MatchReady
	}
	m.Version++
	return m, true, nil
}

// dissolvePlan decides, for Ledger.Dissolve, the reason each ticket of m
// ends with; "" means back to WAITING. It does not know about other queues:
// the caller turns a back-to-WAITING into superseded where needed.
func dissolvePlan(m matcher.Match, req matcher.DissolveRequest) (map[string]string, error) {
	if req.Decliner != "" && !m.Acceptor(req.Decliner) {
		if m.Provider != nil && m.Seated(req.Decliner) {
			return nil, fmt.Errorf("decline match %s: user %s is its requester, not its provider: %w",
				m.ID, req.Decliner, matcher.ErrNotFound)
		}
		return nil, fmt.Errorf("decline match %s: user %s is not seated: %w", m.ID, req.Decliner, matcher.ErrNotFound)
	}
	if m.State != matcher.MatchPendingAccept || m.AcceptBy == nil {
		return nil, &matcher.MatchStateError{Match: m, Reason: "it has no open accept window"}
	}
	closed := !stamp(req.At).Before(*m.AcceptBy)
	if req.Decliner != "" && closed {
		return nil, &matcher.MatchStateError{Match: m, Reason: "its accept window has closed"}
	}
	if req.Decliner == "" && !closed {
		return nil, &matcher.MatchStateError{Match: m, Reason: "its accept window is still open"}
	}
	plan := make(map[string]string, len(m.Players))
	for _, p := range m.Players {
		switch {
		case m.Provider != nil:
			// The provider declined or was silent: the requester asked
			// and waits on, whichever it was.
			plan[p.TicketID] = ""
		case req.Decliner != "" && p.UserID == req.Decliner:
			plan[p.TicketID] = matcher.ReasonDeclined
		case req.Decliner != "":
			// Someone else declined before the window closed: a player
			// who has not answered yet has not failed to, and keeps
			// their place like those who accepted.
			plan[p.TicketID] = ""
		case m.HasAccepted(p.UserID):
			plan[p.TicketID] = ""
		default:
			plan[p.TicketID] = matcher.ReasonAcceptTimeout
		}
	}
	return plan, nil
}

// dissolveTicket applies a plan's reason to a MATCHED ticket of the match.
func dissolveTicket(t matcher.Ticket, reason string, at time.Time) matcher.Ticket {
	if reason == "" {
		t.Status = matcher.StatusWaiting
	} else {
		t.Status = matcher.StatusCancelled
	}
	t.CancelReason = reason
	t.MatchID = ""
	t.UpdatedAt = stamp(at)
	t.Version++
	return t
}

// dissolveEvents are the events of a dissolution: match.dissolved for all,
// then one ticket.update per ticket in seat order.
func dissolveEvents(d matcher.Dissolution, reason string) []matcher.Event {
	events := []matcher.Event{matcher.MatchDissolvedEvent(d.Match, reason)}
	byID := map[string]matcher.Ticket{}
	for _, t := range d.Requeued {
		byID[t.ID] = t
	}
	for _, t := range d.Cancelled {
		byID[t.ID] = t
	}
	for _, p := range d.Match.Players {
		if t, ok := byID[p.TicketID]; ok {
			events = append(events, matcher.TicketUpdatedEvent(t))
		}
	}
	return events
}

// cloneAttributes copies a ticket's attributes; none is nil, as PostgreSQL
// stores it (NULL).
func cloneAttributes(a map[string]string) map[string]string {
	if len(a) == 0 {
		return nil
	}
	return maps.Clone(a)
}

// cloneParts copies a provider seat's parts; none is nil, as the jsonb
// column reads back.
func cloneParts(p map[string]float64) map[string]float64 {
	if len(p) == 0 {
		return nil
	}
	return maps.Clone(p)
}

func cloneTicket(t matcher.Ticket) matcher.Ticket {
	t.Attributes = cloneAttributes(t.Attributes)
	return t
}

func cloneMatch(m matcher.Match) matcher.Match {
	m.Players = slices.Clone(m.Players)
	m.Accepted = slices.Clone(m.Accepted)
	if m.Server != nil {
		s := *m.Server
		m.Server = &s
	}
	if m.AcceptBy != nil {
		at := *m.AcceptBy
		m.AcceptBy = &at
	}
	if m.Provider != nil {
		p := *m.Provider
		p.Parts = cloneParts(p.Parts)
		m.Provider = &p
	}
	return m
}

func cloneEvent(e matcher.Event) matcher.Event {
	e.Users = slices.Clone(e.Users)
	e.Ticket = cloneTicket(e.Ticket)
	e.Match = cloneMatch(e.Match)
	return e
}

// ticketOrder is the order of UserState and Waiting: wait order, then id so
// that ties come out the same from both ledgers (canonical uuid text sorts as
// PostgreSQL sorts uuid values).
func ticketOrder(a, b matcher.Ticket) int {
	if c := a.EnqueuedAt.Compare(b.EnqueuedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// partitionOrder is the order of LivePartitions: by queue, then region.
func partitionOrder(a, b matcher.Partition) int {
	if c := cmp.Compare(a.Queue, b.Queue); c != 0 {
		return c
	}
	return cmp.Compare(a.Region, b.Region)
}

// matchOrder is the order of the matches UserState returns.
func matchOrder(a, b matcher.Match) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// pendingOrder is the order of Pending: soonest AcceptBy, then id.
func pendingOrder(a, b matcher.Match) int {
	var at, bt time.Time
	if a.AcceptBy != nil {
		at = *a.AcceptBy
	}
	if b.AcceptBy != nil {
		bt = *b.AcceptBy
	}
	if c := at.Compare(bt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}
