package matcher

import (
	"time"
)

// TicketStatus is the life cycle of one waiting player:
// WAITING → MATCHED | CANCELLED | EXPIRED. Only WAITING is not terminal.
type TicketStatus string

const (
	StatusWaiting   TicketStatus = "WAITING"
	StatusMatched   TicketStatus = "MATCHED"
	StatusCancelled TicketStatus = "CANCELLED"
	StatusExpired   TicketStatus = "EXPIRED"
)

// Cancel reasons recorded on a CANCELLED ticket.
const (
	ReasonUser          = "user"
	ReasonHeartbeat     = "heartbeat"
	ReasonDeclined      = "declined"
	ReasonAcceptTimeout = "accept_timeout"
)

// Ticket is one waiting player in one queue. Deadline is stamped once at join
// and never moves; Version grows with every change so that clients can keep the
// newest of a push, a hello and a GET.
type Ticket struct {
	ID           string            `json:"id"`
	UserID       string            `json:"userId"`
	Queue        string            `json:"queue"`
	Region       string            `json:"region"`
	Status       TicketStatus      `json:"status"`
	Skill        float64           `json:"skill"`
	Estimated    bool              `json:"estimated"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	EnqueuedAt   time.Time         `json:"enqueuedAt"`
	HeadStart    time.Duration     `json:"-"`
	Deadline     time.Time         `json:"deadline"`
	MatchID      string            `json:"matchId,omitempty"`
	CancelReason string            `json:"cancelReason,omitempty"`
	UpdatedAt    time.Time         `json:"updatedAt"`
	Version      int64             `json:"version"`
}

// Partition names the pool a ticket waits in.
func (t Ticket) Partition() Partition { return Partition{Queue: t.Queue, Region: t.Region} }

// EffectiveEnqueue is the wait-order clock: enqueue time minus the priority
// head start. The deadline is computed from EnqueuedAt, never from this.
func (t Ticket) EffectiveEnqueue() time.Time { return t.EnqueuedAt.Add(-t.HeadStart) }

// Match states.
const (
	MatchPendingAccept = "PENDING_ACCEPT"
	MatchReady         = "READY"
	MatchDissolved     = "DISSOLVED"
)

// How a match was formed.
const (
	FormedFilled   = "FILLED"
	FormedFallback = "FALLBACK"
	FormedTimeout  = "TIMEOUT"
)

// Player is one seat of a match.
type Player struct {
	TicketID string  `json:"ticketId"`
	UserID   string  `json:"userId"`
	Skill    float64 `json:"skill"`
}

// Server is where the players of a READY match meet.
type Server struct {
	Address string `json:"address"`
	Session string `json:"session"`
}

// Match is a formed group of players.
type Match struct {
	ID        string     `json:"id"`
	Queue     string     `json:"queue"`
	Region    string     `json:"region"`
	State     string     `json:"state"`
	FormedBy  string     `json:"formedBy"`
	Players   []Player   `json:"players"`
	Bots      int        `json:"bots"`
	Spread    float64    `json:"spread"`
	Server    *Server    `json:"server"`
	AcceptBy  *time.Time `json:"acceptBy"`
	CreatedAt time.Time  `json:"createdAt"`
	Version   int64      `json:"version"`
}

// UserIDs lists the users seated in the match.
func (m Match) UserIDs() []string {
	ids := make([]string, len(m.Players))
	for i, p := range m.Players {
		ids[i] = p.UserID
	}
	return ids
}

// TicketIDs lists the tickets seated in the match.
func (m Match) TicketIDs() []string {
	ids := make([]string, len(m.Players))
	for i, p := range m.Players {
		ids[i] = p.TicketID
	}
	return ids
}

// Partition is one independently matched pool: a queue in a region.
type Partition struct {
	Queue  string
	Region string
}

func (p Partition) String() string { return p.Queue + ":" + p.Region }

// Event is an outbox row: a message for some users, written in the same
// transaction as the state change it reports and published at least once.
// Payload is the complete server→client frame (JSON).
type Event struct {
	ID        int64
	Users     []string
	Payload   []byte
	CreatedAt time.Time
}
