package main

import "github.com/matchgate/matchgate/protocol"

// What the server sends, as a client decodes it (internal/clientwire).
type (
	wireTicket = protocol.ClientTicket
	wireMatch  = protocol.ClientMatch
	inFrame    = protocol.ClientFrame
)

func seatsOf(players []protocol.ClientSeat) []Seat {
	s := make([]Seat, len(players))
	for i, pl := range players {
		s[i] = Seat{Ticket: pl.TicketID, User: pl.UserID}
	}
	return s
}
