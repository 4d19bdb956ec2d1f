package protocol

import "time"

// The Client types are the protocol as a client sees it (README
// "Protocol"): what the server sends, in plain types of the client's own
// rather than the server's. The chaos run and the load generator check the
// wire through them, decoding what a third-party client would, and with
// encoding/json alone: the Wire types decode through wireTime's
// unmarshaler, which a client at thousands of frames a second cannot afford
// (each time field scanned three times).

// The statuses of a ticket, as the wire spells them.
const (
	StatusWaiting   = "WAITING"
	StatusMatched   = "MATCHED"
	StatusCancelled = "CANCELLED"
	StatusExpired   = "EXPIRED"
)

// ClientTicket is a ticket as sent in joined, cancelled, ticket.update, hello and
// status frames, and by GET /v1/tickets/{id}.
type ClientTicket struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	// Name is the player's display name, "" for none.
	Name       string    `json:"name,omitempty"`
	Queue      string    `json:"queue"`
	Region     string    `json:"region"`
	Status     string    `json:"status"`
	EnqueuedAt time.Time `json:"enqueuedAt"`
	Deadline   time.Time `json:"deadline"`
	// MatchID and CancelReason are "" when the server sends null.
	MatchID      string `json:"matchId"`
	CancelReason string `json:"cancelReason"`
	Version      int64  `json:"version"`
}

// ClientSeat is one player of a match.
type ClientSeat struct {
	TicketID string `json:"ticketId"`
	UserID   string `json:"userId"`
	// Name is the player's display name, "" for none (show UserID).
	Name  string  `json:"name,omitempty"`
	Skill float64 `json:"skill"`
}

// ClientMatch is a match as sent in match.found, hello and status frames, and by
// GET /v1/tickets/{id}.
type ClientMatch struct {
	ID       string       `json:"id"`
	Queue    string       `json:"queue"`
	Region   string       `json:"region"`
	State    string       `json:"state"`
	FormedBy string       `json:"formedBy"`
	Players  []ClientSeat `json:"players"`
	// Provider is nil but for a provider queue's match.
	Provider  *ClientProvider `json:"provider,omitempty"`
	Bots      int             `json:"bots"`
	CreatedAt time.Time       `json:"createdAt"`
}

// ClientProvider is the provider seat of a provider queue's match: who
// the requester (its one player) is given to, the score that chose them
// and each term's contribution to it.
type ClientProvider struct {
	UserID string             `json:"userId"`
	Score  float64            `json:"score"`
	Parts  map[string]float64 `json:"parts,omitempty"`
}

// ClientError is the error member of an error frame or an error response.
type ClientError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	TicketID string `json:"ticketId"`
	MatchID  string `json:"matchId"`
	// RetryAfter is when a refused command may succeed, in whole seconds
	// (COOLDOWN, rate limits); 0 when the server does not say.
	RetryAfter int `json:"retryAfter"`
}

// ClientFrame is any server→client frame; each type fills its own members.
type ClientFrame struct {
	Type    string         `json:"type"`
	Re      string         `json:"re"`
	UserID  string         `json:"userId"`
	Node    string         `json:"node"`
	Ticket  *ClientTicket  `json:"ticket"`
	Match   *ClientMatch   `json:"match"`
	Tickets []ClientTicket `json:"tickets"`
	Matches []ClientMatch  `json:"matches"`
	Error   *ClientError   `json:"error"`
	// Queue, Position, Token and ExpiresAt are the admission queue's:
	// entered and position carry Position; admission.position Queue and
	// Position; admission.ready Queue, Token and ExpiresAt.
	Queue     string          `json:"queue"`
	Position  *ClientPosition `json:"position"`
	Token     string          `json:"token"`
	ExpiresAt time.Time       `json:"expiresAt"`
	// SentAt stamps the frames the load generator publishes itself in its
	// push mode (unix ns).
	SentAt int64 `json:"sentAt"`
}

// ClientPosition is a place in an admission queue (Status WAITING, READY
// or NOT_ENTERED), as sent in entered, position and admission.position
// frames, and by the admission REST routes.
type ClientPosition struct {
	Status string `json:"status"`
	// Rank, Total, ETA and PollAfter (seconds) are a WAITING place's; ETA
	// is nil when the server cannot predict the admission, its High nil
	// when there is no upper bound.
	Rank      int64      `json:"rank"`
	Total     int64      `json:"total"`
	ETA       *ClientETA `json:"eta"`
	PollAfter float64    `json:"pollAfter"`
	// Token and ExpiresAt are a READY place's.
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ClientETA is a waiter's predicted admission in seconds from now.
type ClientETA struct {
	Seconds float64  `json:"seconds"`
	Low     float64  `json:"low"`
	High    *float64 `json:"high"`
}

// ClientTicketView is the body of GET /v1/tickets/{id}: the ticket and, once it
// is matched, its match.
type ClientTicketView struct {
	Ticket ClientTicket `json:"ticket"`
	Match  *ClientMatch `json:"match"`
}
