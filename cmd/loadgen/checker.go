package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Sources of what a client was told about a ticket.
const (
	srcPush   = "push"   // match.found or ticket.update on the socket
	srcReply  = "reply"  // cancelled, or error ALREADY_MATCHED / ALREADY_CANCELLED
	srcHello  = "hello"  // the catch-up after a reconnect
	srcPoll   = "poll"   // a REST-only player's GET
	srcVerify = "verify" // the end-of-run GET sample
)

// statusEnded stands for "CANCELLED or EXPIRED": what ALREADY_CANCELLED says
// without naming which.
const statusEnded = "ENDED"

// Told is one outcome a client learned for a ticket.
type Told struct {
	Status  string `json:"s"`
	MatchID string `json:"m,omitempty"`
	Source  string `json:"src"`
	// At is when the client learned it (unix ns): the receipt of a frame,
	// the sending of a verification GET. Workers compare only their own.
	At int64 `json:"at"`
}

// ticketObs is everything the clients learned about one ticket.
type ticketObs struct {
	User string `json:"u"`
	Rest bool   `json:"rest,omitempty"` // a REST-only player: never pushed
	Told []Told `json:"told,omitempty"` // distinct (status, match, source)
}

// Seat is one player of a match as a client saw it.
type Seat struct {
	Ticket string `json:"t"`
	User   string `json:"u"`
}

// matchObs is a match as first seen by a client.
type matchObs struct {
	Seats     []Seat    `json:"seats"`
	CreatedAt time.Time `json:"createdAt"`
	Changed   bool      `json:"changed,omitempty"` // seen again with other seats
}

// Observations are the checker's raw material. Worker processes ship theirs
// to the parent, which merges them and checks once, so a ticket seen in two
// matches by players of two different workers is still caught.
type Observations struct {
	Tickets map[string]*ticketObs `json:"tickets"`
	Matches map[string]*matchObs  `json:"matches"`
	// Dissolved are the matches a client was told will not be played (an
	// accept window that ended without everyone's accept): no longer live,
	// so their players may be seated again.
	Dissolved map[string]bool `json:"dissolved,omitempty"`
	// Cutoff: a match formed before it should have reached every connected
	// player by the end of the run (the start of the drain).
	Cutoff time.Time `json:"cutoff"`
}

// Checker records what clients saw and checks the invariants of ARCHITECTURE.md §7
// that clients can observe. Safe for concurrent use.
type Checker struct {
	mu  sync.Mutex
	obs Observations
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{obs: Observations{Tickets: map[string]*ticketObs{}, Matches: map[string]*matchObs{}, Dissolved: map[string]bool{}}}
}

func (c *Checker) ticketLocked(id, user string) *ticketObs {
	t := c.obs.Tickets[id]
	if t == nil {
		t = &ticketObs{User: user}
		c.obs.Tickets[id] = t
	}
	if t.User == "" {
		t.User = user
	}
	return t
}

// Joined records a ticket the server created for user.
func (c *Checker) Joined(ticket, user string, rest bool) {
	if ticket == "" {
		return
	}
	c.mu.Lock()
	t := c.ticketLocked(ticket, user)
	t.Rest = t.Rest || rest
	c.mu.Unlock()
}

// Tell records that a client was told status (and matchID for MATCHED) at
// the instant at. WAITING is recorded only from the end-of-run
// verification, where it contradicts any outcome told before the GET.
func (c *Checker) Tell(ticket, user, status, matchID, source string, at time.Time) {
	if ticket == "" || (status == "WAITING" && source != srcVerify) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tellLocked(ticket, user, Told{Status: status, MatchID: matchID, Source: source, At: at.UnixNano()})
}

// tellLocked adds nt unless the same outcome from the same source is
// there; the earliest instant is kept.
func (c *Checker) tellLocked(ticket, user string, nt Told) {
	t := c.ticketLocked(ticket, user)
	for i, x := range t.Told {
		if x.Status == nt.Status && x.MatchID == nt.MatchID && x.Source == nt.Source {
			t.Told[i].At = min(x.At, nt.At)
			return
		}
	}
	t.Told = append(t.Told, nt)
}

// Match records a match a client saw. It reports whether it was new.
func (c *Checker) Match(id string, seats []Seat, createdAt time.Time) bool {
	if id == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.obs.Matches[id]; m != nil {
		if !sameSeats(m.Seats, seats) {
			m.Changed = true
		}
		return false
	}
	c.obs.Matches[id] = &matchObs{Seats: append([]Seat(nil), seats...), CreatedAt: createdAt}
	return true
}

// Dissolve records that a client was told match id was dissolved. It
// reports whether that was new.
func (c *Checker) Dissolve(id string) bool {
	if id == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.obs.Dissolved[id] {
		return false
	}
	c.obs.Dissolved[id] = true
	return true
}

func sameSeats(a, b []Seat) bool {
	if len(a) != len(b) {
		return false
	}
	set := make(map[Seat]int, len(a))
	for _, s := range a {
		set[s]++
	}
	for _, s := range b {
		if set[s] == 0 {
			return false
		}
		set[s]--
	}
	return true
}

// SetCutoff sets the instant before which a formed match must have been
// pushed to its connected players by the time they are verified.
func (c *Checker) SetCutoff(t time.Time) {
	c.mu.Lock()
	c.obs.Cutoff = t
	c.mu.Unlock()
}

// Snapshot returns a deep copy of the observations.
func (c *Checker) Snapshot() *Observations {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := &Observations{Tickets: make(map[string]*ticketObs, len(c.obs.Tickets)),
		Matches: make(map[string]*matchObs, len(c.obs.Matches)), Dissolved: maps.Clone(c.obs.Dissolved), Cutoff: c.obs.Cutoff}
	for id, t := range c.obs.Tickets {
		cp := *t
		cp.Told = append([]Told(nil), t.Told...)
		o.Tickets[id] = &cp
	}
	for id, m := range c.obs.Matches {
		cp := *m
		cp.Seats = append([]Seat(nil), m.Seats...)
		o.Matches[id] = &cp
	}
	return o
}

// Merge adds another checker's observations (a worker's).
func (c *Checker) Merge(o *Observations) {
	if o == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range o.Tickets {
		mine := c.ticketLocked(id, t.User)
		mine.Rest = mine.Rest || t.Rest
		for _, x := range t.Told {
			c.tellLocked(id, t.User, x)
		}
	}
	for id, m := range o.Matches {
		if have := c.obs.Matches[id]; have != nil {
			have.Changed = have.Changed || m.Changed || !sameSeats(have.Seats, m.Seats)
			continue
		}
		cp := *m
		cp.Seats = append([]Seat(nil), m.Seats...)
		c.obs.Matches[id] = &cp
	}
	for id := range o.Dissolved {
		c.obs.Dissolved[id] = true
	}
	if o.Cutoff.After(c.obs.Cutoff) {
		c.obs.Cutoff = o.Cutoff
	}
}

// Unresolved lists tickets no client was told an outcome for, with their
// users, sorted by ticket id.
func (c *Checker) Unresolved() []Seat {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Seat
	for id, t := range c.obs.Tickets {
		if len(t.Told) == 0 {
			out = append(out, Seat{Ticket: id, User: t.User})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ticket < out[j].Ticket })
	return out
}

// Resolved lists tickets with at least one told outcome, sorted by id.
func (c *Checker) Resolved() []Seat {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Seat
	for id, t := range c.obs.Tickets {
		if len(t.Told) > 0 {
			out = append(out, Seat{Ticket: id, User: t.User})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ticket < out[j].Ticket })
	return out
}

// Counts returns the number of tickets and matches observed.
func (c *Checker) Counts() (tickets, matches int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.obs.Tickets), len(c.obs.Matches)
}

// Check returns every violation, sorted:
//   - a user twice in one match, or a ticket twice;
//   - a match seen with different players by different clients;
//   - a ticket seated in two live matches (a dissolved match is not live);
//   - a ticket told two different outcomes (or two different matches), or
//     told an outcome that the end-of-run GET contradicts (being told
//     MATCHED in a match later dissolved is not an outcome);
//   - a ticket told MATCHED m while m's seats do not hold it, or told
//     CANCELLED/EXPIRED while a match seats it;
//   - a ticket of a socket player that GET shows MATCHED in a match formed
//     before the cutoff, which no push, reply or hello ever announced.
func (c *Checker) Check() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var v []string
	seatOf := map[string]string{} // ticket → match
	for _, mid := range slices.Sorted(maps.Keys(c.obs.Matches)) {
		m := c.obs.Matches[mid]
		if m.Changed {
			v = append(v, fmt.Sprintf("match %s was seen with different players by different clients", mid))
		}
		users, tickets := map[string]bool{}, map[string]bool{}
		for _, s := range m.Seats {
			if users[s.User] {
				v = append(v, fmt.Sprintf("user %s is seated twice in match %s", s.User, mid))
			}
			if tickets[s.Ticket] {
				v = append(v, fmt.Sprintf("ticket %s is seated twice in match %s", s.Ticket, mid))
			}
			users[s.User], tickets[s.Ticket] = true, true
			if c.obs.Dissolved[mid] {
				continue
			}
			if other, ok := seatOf[s.Ticket]; ok && other != mid {
				v = append(v, fmt.Sprintf("ticket %s is in two matches: %s and %s", s.Ticket, other, mid))
			}
			seatOf[s.Ticket] = mid
		}
	}
	for _, tid := range slices.Sorted(maps.Keys(c.obs.Tickets)) {
		t := c.obs.Tickets[tid]
		v = append(v, checkTicket(tid, t, seatOf[tid], c.obs.Matches, c.obs.Dissolved, c.obs.Cutoff)...)
	}
	return v
}

// checkTicket applies the per-ticket rules of Check.
func checkTicket(tid string, t *ticketObs, seated string, matches map[string]*matchObs, dissolved map[string]bool, cutoff time.Time) []string {
	var v []string
	var outcome *Told // the first terminal outcome told
	announced := false
	superseded := func(x Told) bool { return x.Status == "MATCHED" && dissolved[x.MatchID] }
	for i := range t.Told {
		x := &t.Told[i]
		if x.Status == "WAITING" || superseded(*x) {
			continue
		}
		if x.Source != srcVerify {
			announced = true
		}
		if outcome == nil {
			outcome = x
			continue
		}
		if !compatible(*outcome, *x) {
			v = append(v, fmt.Sprintf("ticket %s of %s was told two outcomes: %s", tid, t.User, describe(t.Told)))
			return v
		}
		if outcome.Status == statusEnded {
			outcome = x // keep the more precise one
		}
	}
	for _, w := range t.Told {
		if w.Status != "WAITING" {
			continue
		}
		// The GET was sent at w.At: an outcome told before then was
		// committed before then.
		for _, x := range t.Told {
			if x.Status != "WAITING" && !superseded(x) && x.At < w.At {
				v = append(v, fmt.Sprintf("ticket %s of %s: GET says WAITING after the client was told %s", tid, t.User, describe(t.Told)))
				return v
			}
		}
	}
	if outcome == nil {
		return v
	}
	switch outcome.Status {
	case "MATCHED":
		if m := matches[outcome.MatchID]; m != nil && seated != outcome.MatchID {
			v = append(v, fmt.Sprintf("ticket %s of %s was told match %s, whose players do not include it", tid, t.User, outcome.MatchID))
		}
		if !announced && !t.Rest {
			if m := matches[outcome.MatchID]; m != nil && !cutoff.IsZero() && m.CreatedAt.Before(cutoff) {
				v = append(v, fmt.Sprintf("ticket %s of %s is MATCHED in %s (formed %s) but match.found never reached the player",
					tid, t.User, outcome.MatchID, m.CreatedAt.Format(time.RFC3339Nano)))
			}
		}
	default:
		if seated != "" {
			v = append(v, fmt.Sprintf("ticket %s of %s was told %s but is seated in match %s", tid, t.User, outcome.Status, seated))
		}
	}
	return v
}

// compatible reports whether two told outcomes can both be true.
func compatible(a, b Told) bool {
	if a.Status == "MATCHED" || b.Status == "MATCHED" {
		return a.Status == b.Status && a.MatchID == b.MatchID
	}
	return a.Status == b.Status || a.Status == statusEnded || b.Status == statusEnded
}

func describe(ts []Told) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		s += t.Status
		if t.MatchID != "" {
			s += " " + t.MatchID
		}
		s += " (" + t.Source + ")"
	}
	return s
}
