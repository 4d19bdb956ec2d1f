package matcher

import (
	"encoding/json"
	"time"
)

// wireTime renders times as RFC 3339 with milliseconds, in UTC; the zero time
// is null.
type wireTime time.Time

func (t wireTime) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + tt.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`), nil
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

type wireTicket struct {
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

// MarshalJSON renders the wire shape of DESIGN §8 (camelCase, millisecond
// times, absent = null).
func (t Ticket) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireTicket{
		ID: t.ID, UserID: t.UserID, Queue: t.Queue, Region: t.Region, Status: t.Status,
		Skill: t.Skill, Estimated: t.Estimated, Attributes: t.Attributes,
		EnqueuedAt: wireTime(t.EnqueuedAt), Deadline: wireTime(t.Deadline),
		MatchID: nullString(t.MatchID), CancelReason: nullString(t.CancelReason),
		UpdatedAt: wireTime(t.UpdatedAt), Version: t.Version,
	})
}

// UnmarshalJSON reads the wire shape back (clients, tests, the load tester).
func (t *Ticket) UnmarshalJSON(b []byte) error {
	var w wireTicket
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

type wireMatch struct {
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

// MarshalJSON renders the wire shape of DESIGN §8. The server is shown only
// for a READY match: while the match waits for its accepts (or after it
// dissolved) nobody may connect, so nobody is told where.
func (m Match) MarshalJSON() ([]byte, error) {
	w := wireMatch{
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
	return json.Marshal(w)
}

// UnmarshalJSON reads the wire shape back.
func (m *Match) UnmarshalJSON(b []byte) error {
	var w wireMatch
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

// TicketEvent is the outbox event announcing a ticket's new state to its owner.
func TicketEvent(t Ticket) Event {
	payload, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Ticket Ticket `json:"ticket"`
	}{FrameTicketUpdate, t}) // cannot fail: plain data
	return Event{Users: []string{t.UserID}, Payload: payload}
}

// MatchFoundEvent is the outbox event announcing a formed match to every player.
func MatchFoundEvent(m Match) Event {
	payload, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Match Match  `json:"match"`
	}{FrameMatchFound, m})
	return Event{Users: m.UserIDs(), Payload: payload}
}

// MatchReadyEvent is the outbox event telling every player that everyone
// accepted: the match is READY and carries the server to connect to.
func MatchReadyEvent(m Match) Event {
	payload, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Match Match  `json:"match"`
	}{FrameMatchReady, m})
	return Event{Users: m.UserIDs(), Payload: payload}
}

// MatchDissolvedEvent is the outbox event telling every player that the
// match will not be played; reason is ReasonDeclined or ReasonAcceptTimeout.
// Each player's ticket.update (back to WAITING, or CANCELLED) follows.
func MatchDissolvedEvent(m Match, reason string) Event {
	payload, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Match  Match  `json:"match"`
		Reason string `json:"reason"`
	}{FrameMatchDissolved, m, reason})
	return Event{Users: m.UserIDs(), Payload: payload}
}
