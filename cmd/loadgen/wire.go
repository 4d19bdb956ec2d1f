package main

import "github.com/matchgate/matchgate/internal/clientwire"

// What the server sends, as a client decodes it (internal/clientwire).
type (
	wireTicket = clientwire.Ticket
	wireMatch  = clientwire.Match
	inFrame    = clientwire.Frame
)

func seatsOf(players []clientwire.Seat) []Seat {
	s := make([]Seat, len(players))
	for i, pl := range players {
		s[i] = Seat{Ticket: pl.TicketID, User: pl.UserID}
	}
	return s
}
