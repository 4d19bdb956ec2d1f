package main

import (
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// The tickets and matches of pushed frames, as loadgen reads them: only the
// fields it checks, decoded by encoding/json directly. The server's types
// decode every field through their own unmarshalers (each object scanned
// twice, each time field three times), and at 5,000 joins/s that was a
// quarter of the load generator's CPU.
type wireTicket struct {
	ID         string               `json:"id"`
	Status     matcher.TicketStatus `json:"status"`
	MatchID    string               `json:"matchId"`
	EnqueuedAt time.Time            `json:"enqueuedAt"`
}

type wireMatch struct {
	ID        string           `json:"id"`
	State     string           `json:"state"`
	Players   []matcher.Player `json:"players"`
	CreatedAt time.Time        `json:"createdAt"`
}

func seatsOf(players []matcher.Player) []Seat {
	s := make([]Seat, len(players))
	for i, pl := range players {
		s[i] = Seat{Ticket: pl.TicketID, User: pl.UserID}
	}
	return s
}
