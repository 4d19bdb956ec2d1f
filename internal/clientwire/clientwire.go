// Package clientwire is the protocol as a client sees it (README
// "Protocol"): what the server sends, in plain types of the client's own
// rather than the server's. The chaos run and the load generator check the
// wire through it, decoding what a third-party client would, and with
// encoding/json alone: the server's types decode through their own
// unmarshalers, which a client at thousands of frames a second cannot
// afford (each object scanned twice, each time field three times).
package clientwire

import "time"

// The statuses of a ticket, as the wire spells them.
const (
	StatusWaiting   = "WAITING"
	StatusMatched   = "MATCHED"
	StatusCancelled = "CANCELLED"
	StatusExpired   = "EXPIRED"
)

// Ticket is a ticket as sent in joined, cancelled, ticket.update, hello and
// status frames, and by GET /v1/tickets/{id}.
type Ticket struct {
	ID         string    `json:"id"`
	UserID     string    `json:"userId"`
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

// Seat is one player of a match.
type Seat struct {
	TicketID string  `json:"ticketId"`
	UserID   string  `json:"userId"`
	Skill    float64 `json:"skill"`
}

// Match is a match as sent in match.found, hello and status frames, and by
// GET /v1/tickets/{id}.
type Match struct {
	ID        string    `json:"id"`
	Queue     string    `json:"queue"`
	Region    string    `json:"region"`
	State     string    `json:"state"`
	FormedBy  string    `json:"formedBy"`
	Players   []Seat    `json:"players"`
	Bots      int       `json:"bots"`
	CreatedAt time.Time `json:"createdAt"`
}

// Error is the error member of an error frame or an error response.
type Error struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	TicketID string `json:"ticketId"`
	MatchID  string `json:"matchId"`
	// RetryAfter is when a refused command may succeed, in whole seconds
	// (COOLDOWN, rate limits); 0 when the server does not say.
	RetryAfter int `json:"retryAfter"`
}

// Frame is any server→client frame; each type fills its own members.
type Frame struct {
	Type    string   `json:"type"`
	Re      string   `json:"re"`
	UserID  string   `json:"userId"`
	Node    string   `json:"node"`
	Ticket  *Ticket  `json:"ticket"`
	Match   *Match   `json:"match"`
	Tickets []Ticket `json:"tickets"`
	Matches []Match  `json:"matches"`
	Error   *Error   `json:"error"`
	// SentAt stamps the frames the load generator publishes itself in its
	// push mode (unix ns).
	SentAt int64 `json:"sentAt"`
}

// TicketView is the body of GET /v1/tickets/{id}: the ticket and, once it
// is matched, its match.
type TicketView struct {
	Ticket Ticket `json:"ticket"`
	Match  *Match `json:"match"`
}
