package matcher

import (
	"encoding/json"
	"time"
)

// wireTime renders times as RFC 3339 with milliseconds, in UTC; the zero time
// is null.
type wireTime time.Time

// wireTimeLayout is the layout of a wire time, in UTC.
const wireTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON is what json.Marshal of a wire type writes for a time. The
// appenders write the same without it (wireTime.appendJSON); the tests
// hold them to this one, so it must not be written in terms of them.
func (t wireTime) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(`"2006-01-02T15:04:05.000Z"`))
	b = append(b, '"')
	b = tt.UTC().AppendFormat(b, wireTimeLayout)
	return append(b, '"'), nil
}

func (t *wireTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = wireTime{}
		return nil
	}
	var tt time.Time
	if err := json.Unmarshal(b, &tt); err != nil {
		return err
	}
	*t = wireTime(tt)
	return nil
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// WireTicket is a ticket in the wire shape of ARCHITECTURE.md §8 (camelCase,
// millisecond times, absent = null): what Ticket's MarshalJSON writes.
// Events and replies that carry a ticket write this with AppendJSON rather
// than have encoding/json call the Ticket's MarshalJSON, whose output it
// scans again (that cost more than the encoding itself: 5.3 against 2.0 µs
// for a match.found).
type WireTicket struct {
	ID           string            `json:"id"`
	UserID       string            `json:"userId"`
	Queue        string            `json:"queue"`
	Region       string            `json:"region"`
	Status       TicketStatus      `json:"status"`
	Skill        float64           `json:"skill"`
	Estimated    bool              `json:"estimated"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	EnqueuedAt   wireTime          `json:"enqueuedAt"`
	Deadline     wireTime          `json:"deadline"`
	MatchID      *string           `json:"matchId"`
	CancelReason *string           `json:"cancelReason"`
	UpdatedAt    wireTime          `json:"updatedAt"`
	Version      int64             `json:"version"`
}

// Wire is t in the wire shape of ARCHITECTURE.md §8.
func (t Ticket) Wire() WireTicket {
	return WireTicket{
		ID: t.ID, UserID: t.UserID, Queue: t.Queue, Region: t.Region, Status: t.Status,
		Skill: t.Skill, Estimated: t.Estimated, Attributes: t.Attributes,
		EnqueuedAt: wireTime(t.EnqueuedAt), Deadline: wireTime(t.Deadline),
		MatchID: nullString(t.MatchID), CancelReason: nullString(t.CancelReason),
		UpdatedAt: wireTime(t.UpdatedAt), Version: t.Version,
	}
}

// MarshalJSON renders the wire shape of ARCHITECTURE.md §8 (camelCase, millisecond
// times, absent = null).
func (t Ticket) MarshalJSON() ([]byte, error) {
	return t.Wire().AppendJSON(make([]byte, 0, ticketJSONCap)), nil
}

// UnmarshalJSON reads the wire shape back (clients, tests, the load tester).
func (t *Ticket) UnmarshalJSON(b []byte) error {
	var w WireTicket
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = Ticket{
		ID: w.ID, UserID: w.UserID, Queue: w.Queue, Region: w.Region, Status: w.Status,
		Skill: w.Skill, Estimated: w.Estimated, Attributes: w.Attributes,
		EnqueuedAt: time.Time(w.EnqueuedAt), Deadline: time.Time(w.Deadline),
		UpdatedAt: time.Time(w.UpdatedAt), Version: w.Version,
	}
	if w.MatchID != nil {
		t.MatchID = *w.MatchID
	}
	if w.CancelReason != nil {
		t.CancelReason = *w.CancelReason
	}
	return nil
}

// WireMatch is a match in the wire shape of ARCHITECTURE.md §8: what Match's
// MarshalJSON writes (see WireTicket).
type WireMatch struct {
	ID        string    `json:"id"`
	Queue     string    `json:"queue"`
	Region    string    `json:"region"`
	State     string    `json:"state"`
	FormedBy  string    `json:"formedBy"`
	Players   []Player  `json:"players"`
	Bots      int       `json:"bots"`
	Spread    float64   `json:"spread"`
	Server    *Server   `json:"server"`
	AcceptBy  *wireTime `json:"acceptBy"`
	Accepted  []string  `json:"accepted"`
	CreatedAt wireTime  `json:"createdAt"`
	Version   int64     `json:"version"`
}

// Wire is m in the wire shape of ARCHITECTURE.md §8. The server is shown only for a
// READY match: while the match waits for its accepts (or after it
// dissolved) nobody may connect, so nobody is told where.
func (m Match) Wire() WireMatch {
	w := WireMatch{
		ID: m.ID, Queue: m.Queue, Region: m.Region, State: m.State, FormedBy: m.FormedBy,
		Players: m.Players, Bots: m.Bots, Spread: m.Spread, Accepted: m.Accepted,
		CreatedAt: wireTime(m.CreatedAt), Version: m.Version,
	}
	if m.State == MatchReady {
		w.Server = m.Server
	}
	if w.Players == nil {
		w.Players = []Player{}
	}
	if w.Accepted == nil {
		w.Accepted = []string{}
	}
	if m.AcceptBy != nil {
		at := wireTime(*m.AcceptBy)
		w.AcceptBy = &at
	}
	return w
}

// MarshalJSON renders m.Wire().
func (m Match) MarshalJSON() ([]byte, error) {
	return m.Wire().AppendJSON(make([]byte, 0, matchJSONCap)), nil
}

// UnmarshalJSON reads the wire shape back.
func (m *Match) UnmarshalJSON(b []byte) error {
	var w WireMatch
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Match{
		ID: w.ID, Queue: w.Queue, Region: w.Region, State: w.State, FormedBy: w.FormedBy,
		Players: w.Players, Bots: w.Bots, Spread: w.Spread, Server: w.Server,
		CreatedAt: time.Time(w.CreatedAt), Version: w.Version,
	}
	if len(w.Accepted) > 0 {
		m.Accepted = w.Accepted
	}
	if w.AcceptBy != nil {
		at := time.Time(*w.AcceptBy)
		m.AcceptBy = &at
	}
	return nil
}

// Server→client frame types pushed through the outbox.
const (
	FrameTicketUpdate   = "ticket.update"
	FrameMatchFound     = "match.found"
	FrameMatchReady     = "match.ready"
	FrameMatchDissolved = "match.dissolved"
)

// ticketJSONCap and matchJSONCap hold a ticket and a pair's match, frame
// included, in one allocation (both are size classes of the allocator): with
// UUIDs for ids a ticket.update is up to about 440 bytes, and a pair's match
// frame 450 to 660, the most once both have accepted.
const (
	ticketJSONCap = 512
	matchJSONCap  = 768
)

// TicketEvent is the outbox event announcing a ticket's new state to its owner.
func TicketEvent(t Ticket) Event {
	b := make([]byte, 0, ticketJSONCap)
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, FrameTicketUpdate)
	b = append(b, `,"ticket":`...)
	b = t.Wire().AppendJSON(b)
	return Event{Users: []string{t.UserID}, Payload: append(b, '}')}
}

// matchFrame opens a match frame: {"type":typ,"match":{…} without its end.
func matchFrame(typ string, m Match) []byte {
	b := make([]byte, 0, matchJSONCap)
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, typ)
	b = append(b, `,"match":`...)
	return m.Wire().AppendJSON(b)
}

// MatchFoundEvent is the outbox event announcing a formed match to every player.
func MatchFoundEvent(m Match) Event {
	return Event{Users: m.UserIDs(), Payload: append(matchFrame(FrameMatchFound, m), '}')}
}

// MatchReadyEvent is the outbox event telling every player that everyone
// accepted: the match is READY and carries the server to connect to.
func MatchReadyEvent(m Match) Event {
	return Event{Users: m.UserIDs(), Payload: append(matchFrame(FrameMatchReady, m), '}')}
}

// MatchDissolvedEvent is the outbox event telling every player that the
// match will not be played; reason is ReasonDeclined or ReasonAcceptTimeout.
// Each player's ticket.update (back to WAITING, or CANCELLED) follows.
func MatchDissolvedEvent(m Match, reason string) Event {
	b := append(matchFrame(FrameMatchDissolved, m), `,"reason":`...)
	b = AppendJSONString(b, reason)
	return Event{Users: m.UserIDs(), Payload: append(b, '}')}
}
