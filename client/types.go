package client

import (
	"time"

	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/provider"
)

// Ticket is a ticket as the server sends it (docs/asyncapi.yaml: joined,
// cancelled, ticket.update, hello, status). Version grows with every
// change; the client keeps the highest it has seen.
type Ticket struct {
	protocol.ClientTicket
	Skill      float64           `json:"skill"`
	Estimated  bool              `json:"estimated"`
	Attributes map[string]string `json:"attributes,omitempty"`
	UpdatedAt  time.Time         `json:"updatedAt"`
	// Relaxed lists the constraints a provider queue's wait has dropped.
	Relaxed []string `json:"relaxed,omitempty"`
}

// Match is a match as the server sends it (match.found, match.ready,
// match.dissolved, match.update, hello, status). protocol.ClientMatch
// leaves out what this client needs to order and act on matches: the
// version, the accept window and the server.
type Match struct {
	protocol.ClientMatch
	Spread float64 `json:"spread"`
	// Server is where to connect, sent only once the match is READY.
	Server *Server `json:"server"`
	// AcceptBy ends the accept window of a PENDING_ACCEPT match.
	AcceptBy *time.Time `json:"acceptBy"`
	Accepted []string   `json:"accepted"`
	Version  int64      `json:"version"`
}

// Server is the game server a READY match was given.
type Server struct {
	Address string `json:"address"`
	Session string `json:"session"`
}

// Match states, as the wire spells them.
const (
	MatchPendingAccept = "PENDING_ACCEPT"
	MatchReady         = "READY"
	MatchDissolved     = "DISSOLVED"
)

// Position is a place in an admission queue: WAITING (rank, total, ETA),
// READY (the entry token) or NOT_ENTERED. The wire gives it no version;
// see Client.Admission for how the client orders places.
type Position = protocol.ClientPosition

// QueuePosition is a place in one admission queue, as hello lists them.
type QueuePosition struct {
	Queue    string   `json:"queue"`
	Position Position `json:"position"`
}

// Attributes are what a provider offers in a provider queue.
type Attributes = provider.Attributes

// Provider is a provider's state in one provider queue: the provider
// reply, and hello's providers list.
type Provider struct {
	Queue       string       `json:"queue"`
	UserID      string       `json:"userId"`
	Online      bool         `json:"online"`
	Capacity    int          `json:"capacity"`
	Used        int          `json:"used"`
	Attributes  Attributes   `json:"attributes"`
	LastSeen    time.Time    `json:"lastSeen"`
	Assignments []Assignment `json:"assignments,omitempty"`
}

// Requester names the requester of an assignment.
type Requester struct {
	UserID   string `json:"userId"`
	TicketID string `json:"ticketId"`
}

// Assignment is a requester given to a provider's slot: OFFERED, ACCEPTED,
// or ended DECLINED, EXPIRED or ENDED. Version grows with every change.
type Assignment struct {
	ID         string             `json:"id"`
	Queue      string             `json:"queue"`
	Status     string             `json:"status"`
	Requester  Requester          `json:"requester"`
	Score      float64            `json:"score"`
	Parts      map[string]float64 `json:"parts,omitempty"`
	OfferedAt  time.Time          `json:"offeredAt"`
	AcceptBy   time.Time          `json:"acceptBy"`
	AcceptedAt *time.Time         `json:"acceptedAt,omitempty"`
	EndedAt    *time.Time         `json:"endedAt,omitempty"`
	EndReason  string             `json:"endReason,omitempty"`
	Version    int64              `json:"version"`
}

// Ranking is a board's Top of one window's current period: the
// subscribed reply and each ranking.update push.
type Ranking struct {
	Ranking        string                `json:"ranking"`
	Window         string                `json:"window"`
	Period         string                `json:"period"`
	WeightsVersion int64                 `json:"weightsVersion"`
	Items          []protocol.RankedItem `json:"items"`
}

// frame is any server→client frame, decoded once; each type fills its
// own members (docs/asyncapi.yaml).
type frame struct {
	Type   string `json:"type"`
	Re     string `json:"re"`
	UserID string `json:"userId"`
	Node   string `json:"node"`

	Ticket  *Ticket               `json:"ticket"`
	Match   *Match                `json:"match"`
	Reason  string                `json:"reason"`
	Tickets []Ticket              `json:"tickets"`
	Matches []Match               `json:"matches"`
	More    bool                  `json:"more"`
	Next    string                `json:"next"`
	Error   *protocol.ClientError `json:"error"`

	Queue     string          `json:"queue"`
	Position  *Position       `json:"position"`
	Token     string          `json:"token"`
	ExpiresAt time.Time       `json:"expiresAt"`
	Admission []QueuePosition `json:"admission"`

	Providers  []Provider  `json:"providers"`
	Provider   *Provider   `json:"provider"`
	Assignment *Assignment `json:"assignment"`

	Ranking        string                `json:"ranking"`
	Window         string                `json:"window"`
	Period         string                `json:"period"`
	WeightsVersion int64                 `json:"weightsVersion"`
	Items          []protocol.RankedItem `json:"items"`
}
