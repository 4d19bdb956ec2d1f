package protocol

import (
	"encoding/json"
	"time"

	"github.com/matchgate/matchgate/matcher"
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

// WireTicket is a ticket in its wire shape (README "Protocol": camelCase,
// millisecond times, absent = null). Frames write it with AppendJSON rather
// than through encoding/json and a MarshalJSON whose output encoding/json
// scans again (that cost more than the encoding itself: 5.3 against 2.0 µs
// for a match.found).
type WireTicket struct {
	ID           string               `json:"id"`
	UserID       string               `json:"userId"`
	Name         string               `json:"name,omitempty"`
	Queue        string               `json:"queue"`
	Region       string               `json:"region"`
	Status       matcher.TicketStatus `json:"status"`
	Skill        float64              `json:"skill"`
	Estimated    bool                 `json:"estimated"`
	Attributes   map[string]string    `json:"attributes,omitempty"`
	EnqueuedAt   wireTime             `json:"enqueuedAt"`
	Deadline     wireTime             `json:"deadline"`
	MatchID      *string              `json:"matchId"`
	CancelReason *string              `json:"cancelReason"`
	UpdatedAt    wireTime             `json:"updatedAt"`
	Version      int64                `json:"version"`
	// Relaxed lists, in a provider queue's ticket.update pushed when the
	// wait drops a constraint, the constraints dropped so far; the ticket
	// itself is unchanged (same version).
	Relaxed []string `json:"relaxed,omitempty"`
}

// TicketOf is t in its wire shape.
func TicketOf(t matcher.Ticket) WireTicket {
	return WireTicket{
		ID: t.ID, UserID: t.UserID, Name: t.Name, Queue: t.Queue, Region: t.Region, Status: t.Status,
		Skill: t.Skill, Estimated: t.Estimated, Attributes: t.Attributes,
		EnqueuedAt: wireTime(t.EnqueuedAt), Deadline: wireTime(t.Deadline),
		MatchID: nullString(t.MatchID), CancelReason: nullString(t.CancelReason),
		UpdatedAt: wireTime(t.UpdatedAt), Version: t.Version, Relaxed: t.Relaxed,
	}
}

// WireMatch is a match in its wire shape (see WireTicket).
type WireMatch struct {
	ID       string           `json:"id"`
	Queue    string           `json:"queue"`
	Region   string           `json:"region"`
	State    string           `json:"state"`
	FormedBy string           `json:"formedBy"`
	Players  []matcher.Player `json:"players"`
	// Provider is the seat of a provider queue's match, absent otherwise:
	// who the requester is given to, the score and its terms.
	Provider  *matcher.ProviderSeat `json:"provider,omitempty"`
	Bots      int                   `json:"bots"`
	Spread    float64               `json:"spread"`
	Server    *matcher.Server       `json:"server"`
	AcceptBy  *wireTime             `json:"acceptBy"`
	Accepted  []string              `json:"accepted"`
	CreatedAt wireTime              `json:"createdAt"`
	Version   int64                 `json:"version"`
}

// MatchOf is m in its wire shape. The server is shown only for a
// READY match: while the match waits for its accepts (or after it
// dissolved) nobody may connect, so nobody is told where.
func MatchOf(m matcher.Match) WireMatch {
	w := WireMatch{
		ID: m.ID, Queue: m.Queue, Region: m.Region, State: m.State, FormedBy: m.FormedBy,
		Players: m.Players, Provider: m.Provider, Bots: m.Bots, Spread: m.Spread, Accepted: m.Accepted,
		CreatedAt: wireTime(m.CreatedAt), Version: m.Version,
	}
	if m.State == matcher.MatchReady {
		w.Server = m.Server
	}
	if w.Players == nil {
		w.Players = []matcher.Player{}
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

// Server→client frame types of the events pushed through the outbox.
const (
	FrameTicketUpdate   = "ticket.update"
	FrameMatchFound     = "match.found"
	FrameMatchReady     = "match.ready"
	FrameMatchDissolved = "match.dissolved"
)

// Server→client frame types of the admission pushes (AppendAdmissionPosition,
// AppendAdmissionReady): a waiter's new place, and its admission with the
// entry token.
const (
	FrameAdmissionPosition = "admission.position"
	FrameAdmissionReady    = "admission.ready"
)

// ticketJSONCap and matchJSONCap hold a ticket and a pair's match, frame
// included, in one allocation (both are size classes of the allocator): with
// UUIDs for ids a ticket.update is up to about 440 bytes, and a pair's match
// frame 450 to 660, the most once both have accepted.
const (
	ticketJSONCap = 512
	matchJSONCap  = 768
)

// Frame renders e as the frame its users receive; nil for a kind it does
// not know. Publishing renders each event once, whatever its number of
// users.
func Frame(e matcher.Event) []byte {
	switch e.Kind {
	case matcher.EventTicketUpdated:
		b := make([]byte, 0, ticketJSONCap)
		b = append(b, `{"type":`...)
		b = AppendJSONString(b, FrameTicketUpdate)
		b = append(b, `,"ticket":`...)
		b = TicketOf(e.Ticket).AppendJSON(b)
		return append(b, '}')
	case matcher.EventMatchFound:
		return append(matchFrame(FrameMatchFound, e.Match), '}')
	case matcher.EventMatchReady:
		return append(matchFrame(FrameMatchReady, e.Match), '}')
	case matcher.EventMatchDissolved:
		b := append(matchFrame(FrameMatchDissolved, e.Match), `,"reason":`...)
		b = AppendJSONString(b, e.Reason)
		return append(b, '}')
	}
	return nil
}

// matchFrame opens a match frame: {"type":typ,"match":{…} without its end.
func matchFrame(typ string, m matcher.Match) []byte {
	b := make([]byte, 0, matchJSONCap)
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, typ)
	b = append(b, `,"match":`...)
	return MatchOf(m).AppendJSON(b)
}

// Client→server frame types (README "Protocol").
const (
	FrameJoin    = "join"
	FrameCancel  = "cancel"
	FrameAccept  = "accept"
	FrameDecline = "decline"
	FrameStatus  = "status"
	FramePing    = "ping"
	// The admission queue's commands; position is also the type of its
	// reply, as status is.
	FrameEnter    = "enter"
	FramePosition = "position"
	FrameLeave    = "leave"
)

// Server→client frame types other than the pushes: the catch-up and the
// replies to commands.
const (
	FrameHello       = "hello"
	FrameJoined      = "joined"
	FrameCancelled   = "cancelled"
	FrameMatchUpdate = "match.update"
	FramePong        = "pong"
	FrameError       = "error"
	// FrameEntered answers enter with the place; FrameLeft answers leave.
	FrameEntered = "entered"
	FrameLeft    = "left"
)

// ClientFrameTypes are the frame types a client may send as a Command
// (RankingClientFrameTypes are the ranking frames').
var ClientFrameTypes = []string{FrameJoin, FrameCancel, FrameAccept, FrameDecline, FrameStatus, FramePing,
	FrameEnter, FramePosition, FrameLeave}

// ServerFrameTypes are the frame types the server sends: the replies, the
// catch-up and the pushes (the ranking frames' too: RankingFrame).
var ServerFrameTypes = []string{
	FrameHello, FrameJoined, FrameCancelled, FrameMatchUpdate, FrameStatus, FramePong, FrameError,
	FrameTicketUpdate, FrameMatchFound, FrameMatchReady, FrameMatchDissolved,
	FrameEntered, FramePosition, FrameLeft, FrameAdmissionPosition, FrameAdmissionReady,
	FrameSubscribed, FrameUnsubscribed, FrameRankingUpdate,
}
