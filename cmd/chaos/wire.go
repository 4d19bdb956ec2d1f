package main

import (
	"encoding/json"

	"github.com/matchgate/matchgate/protocol"
)

// The protocol as a client sees it (README "Protocol", ARCHITECTURE.md §8), from
// internal/clientwire: not the server's types, since the run checks the
// wire and decodes what a third-party client would.
type (
	wireTicket = protocol.ClientTicket
	wireSeat   = protocol.ClientSeat
	wireMatch  = protocol.ClientMatch
	wireError  = protocol.ClientError
	inFrame    = protocol.ClientFrame
)

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
)
