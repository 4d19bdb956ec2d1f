package client

import (
	"slices"
	"sort"
	"time"
)

// store keeps the newest known state of every ticket, match and
// assignment (by version: an object whose version is not above the one
// held is ignored, so a stale frame never overwrites a newer one), the
// user's place in each admission queue and a provider's state in each
// provider queue. It is web/matchgate.js's Store, and is not safe for
// concurrent use: the Client guards it.
type store struct {
	tickets     map[string]Ticket
	matches     map[string]Match
	assignments map[string]Assignment
	admissions  map[string]Position
	providers   map[string]Provider
}

func newStore() *store {
	return &store{
		tickets:     map[string]Ticket{},
		matches:     map[string]Match{},
		assignments: map[string]Assignment{},
		admissions:  map[string]Position{},
		providers:   map[string]Provider{},
	}
}

// putTicket stores t unless an equal or newer version is held, and
// reports whether it did. A WAITING ticket seated in a live match held
// here is stored as MATCHED: match.found may arrive before the ticket's
// own update, or without one.
func (s *store) putTicket(t Ticket) bool {
	if t.ID == "" {
		return false
	}
	if old, ok := s.tickets[t.ID]; ok && t.Version <= old.Version {
		return false
	}
	if t.Status == StatusWaiting {
		if m, ok := s.seatedIn(t.ID); ok {
			t = seated(t, m)
		}
	}
	s.tickets[t.ID] = t
	return true
}

// putMatch stores m unless an equal or newer version is held, and returns
// whether it did with the tickets it marked MATCHED (seat).
func (s *store) putMatch(m Match) (bool, []Ticket) {
	if m.ID == "" {
		return false, nil
	}
	if old, ok := s.matches[m.ID]; ok && m.Version <= old.Version {
		return false, nil
	}
	s.matches[m.ID] = m
	return true, s.seat(m)
}

// seat marks the WAITING tickets seated in m as MATCHED, keeping each
// ticket's own version so that any state the server sends later wins.
func (s *store) seat(m Match) []Ticket {
	if m.State == MatchDissolved {
		return nil
	}
	var changed []Ticket
	for _, p := range m.Players {
		t, ok := s.tickets[p.TicketID]
		if ok && t.Status == StatusWaiting {
			t = seated(t, m)
			s.tickets[t.ID] = t
			changed = append(changed, t)
		}
	}
	return changed
}

func (s *store) seatedIn(ticketID string) (Match, bool) {
	for _, m := range s.matches {
		if m.State == MatchDissolved {
			continue
		}
		for _, p := range m.Players {
			if p.TicketID == ticketID {
				return m, true
			}
		}
	}
	return Match{}, false
}

func seated(t Ticket, m Match) Ticket {
	t.Status, t.MatchID = StatusMatched, m.ID
	if !m.CreatedAt.IsZero() {
		t.UpdatedAt = m.CreatedAt
	}
	return t
}

// putAssignment stores a unless an equal or newer version is held.
func (s *store) putAssignment(a Assignment) bool {
	if a.ID == "" {
		return false
	}
	if old, ok := s.assignments[a.ID]; ok && a.Version <= old.Version {
		return false
	}
	s.assignments[a.ID] = a
	return true
}

// Where a place was heard, for putAdmission.
type placeSource int

const (
	fromEnter placeSource = iota // the reply to enter: a new place
	fromHello                    // hello: the state after a (re)connect
	fromReply                    // the reply to position
	fromPush                     // admission.position, admission.ready
	fromLeave                    // the reply to leave
)

// putAdmission keeps p as the place in queue and reports whether it did.
// A place carries no version on the wire, so one rule stands in for it
// (web/matchgate.js _putAdmission): a WAITING place heard in a reply or a
// push does not replace a READY one whose token is alive, since a waiter
// only moves forward and a position answered just before the admission
// can arrive just after admission.ready. An enter and hello always
// replace it.
func (s *store) putAdmission(queue string, p Position, src placeSource, now time.Time) bool {
	if queue == "" || p.Status == "" {
		return false
	}
	held, ok := s.admissions[queue]
	if ok && held.Status == PositionReady && p.Status == PositionWaiting &&
		src != fromEnter && src != fromHello && now.Before(held.ExpiresAt) {
		return false
	}
	s.admissions[queue] = p
	return true
}

// helloAdmissions merges hello's list of the user's live places: a place
// held here that it does not name ended while the socket was away. It
// returns the queues whose place it set.
func (s *store) helloAdmissions(list []QueuePosition, now time.Time) []string {
	named := map[string]bool{}
	var changed []string
	for _, e := range list {
		named[e.Queue] = true
		if s.putAdmission(e.Queue, e.Position, fromHello, now) {
			changed = append(changed, e.Queue)
		}
	}
	for q, p := range s.admissions {
		if !named[q] && p.Status != PositionNotEntered {
			s.admissions[q] = Position{Status: PositionNotEntered}
			changed = append(changed, q)
		}
	}
	sort.Strings(changed)
	return changed
}

// putProvider keeps p as the provider's state in its queue, as last
// heard: provider replies and hello carry no version, but each is the
// server's state when sent and they arrive in order on one socket. It
// stores the assignments p lists and returns those that changed.
func (s *store) putProvider(p Provider) []Assignment {
	if p.Queue == "" {
		return nil
	}
	var changed []Assignment
	for _, a := range p.Assignments {
		if s.putAssignment(a) {
			changed = append(changed, a)
		}
	}
	s.providers[p.Queue] = p
	return changed
}

// helloProviders merges hello's providers list; a queue held here that it
// does not name is one the user is no longer known in: offline. It
// returns the providers it set and the assignments that changed.
func (s *store) helloProviders(list []Provider) ([]Provider, []Assignment) {
	named := map[string]bool{}
	var ps []Provider
	var as []Assignment
	for _, p := range list {
		if p.Queue == "" {
			continue
		}
		named[p.Queue] = true
		as = append(as, s.putProvider(p)...)
		ps = append(ps, p)
	}
	for q, p := range s.providers {
		if !named[q] && p.Online {
			p.Online, p.Assignments = false, nil
			s.providers[q] = p
			ps = append(ps, p)
		}
	}
	return ps, as
}

// waiting lists the WAITING tickets, oldest first.
func (s *store) waiting() []Ticket {
	var out []Ticket
	for _, t := range s.tickets {
		if t.Status == StatusWaiting {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Ticket) int { return a.EnqueuedAt.Compare(b.EnqueuedAt) })
	return out
}
