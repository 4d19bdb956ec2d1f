package main

import (
	"encoding/json"
	"time"
)

// The protocol as a client sees it (README "Protocol", DESIGN §8). These are
// the chaos run's own types, not the server's: the run checks the wire, so
// it decodes what a third-party client would.

// wireTicket is a ticket as sent in joined, cancelled, ticket.update, hello
// and status frames.
type wireTicket struct {
	ID           string    `json:"id"`
	UserID       string    `json:"userId"`
	Queue        string    `json:"queue"`
	Region       string    `json:"region"`
	Status       string    `json:"status"`
	EnqueuedAt   time.Time `json:"enqueuedAt"`
	Deadline     time.Time `json:"deadline"`
	MatchID      *string   `json:"matchId"`
	CancelReason *string   `json:"cancelReason"`
	Version      int64     `json:"version"`
}

func (t wireTicket) matchID() string {
	if t.MatchID == nil {
		return ""
	}
	return *t.MatchID
}

// wireSeat is one player of a match.
type wireSeat struct {
	TicketID string  `json:"ticketId"`
	UserID   string  `json:"userId"`
	Skill    float64 `json:"skill"`
}

// wireMatch is a match as sent in match.found, hello and status frames.
type wireMatch struct {
	ID        string     `json:"id"`
	Queue     string     `json:"queue"`
	Region    string     `json:"region"`
	State     string     `json:"state"`
	FormedBy  string     `json:"formedBy"`
	Players   []wireSeat `json:"players"`
	Bots      int        `json:"bots"`
	CreatedAt time.Time  `json:"createdAt"`
}

// wireError is the error member of an error frame.
type wireError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	TicketID string `json:"ticketId"`
	MatchID  string `json:"matchId"`
}

// inFrame is any server→client frame; each type fills its own members.
type inFrame struct {
	Type    string       `json:"type"`
	Re      string       `json:"re"`
	UserID  string       `json:"userId"`
	Node    string       `json:"node"`
	Ticket  *wireTicket  `json:"ticket"`
	Match   *wireMatch   `json:"match"`
	Tickets []wireTicket `json:"tickets"`
	Matches []wireMatch  `json:"matches"`
	Error   *wireError   `json:"error"`
}

// outFrame is a client→server command.
type outFrame struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Queue    string `json:"queue,omitempty"`
	TicketID string `json:"ticketId,omitempty"`
}

func decodeFrame(b []byte) (inFrame, error) {
	var f inFrame
	err := json.Unmarshal(b, &f)
	return f, err
}

// Frame and error names used by the checks.
const (
	frameHello        = "hello"
	frameStatus       = "status"
	frameJoined       = "joined"
	frameCancelled    = "cancelled"
	frameMatchFound   = "match.found"
	frameTicketUpdate = "ticket.update"
	frameError        = "error"

	codeAlreadyQueued    = "ALREADY_QUEUED"
	codeAlreadyMatched   = "ALREADY_MATCHED"
	codeAlreadyCancelled = "ALREADY_CANCELLED"
	codeNotFound         = "NOT_FOUND"

	statusWaiting   = "WAITING"
	statusMatched   = "MATCHED"
	statusCancelled = "CANCELLED"
	statusExpired   = "EXPIRED"
)
