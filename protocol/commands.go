package protocol

// Command is a client→server frame (README "Protocol"): the envelope, type
// and id, and the members of every command; each command carries only its
// own (join: queue, region, attributes; cancel: ticketId; accept and
// decline: matchId; enter, position and leave, of an admission queue:
// queue; status and ping: none). A client leaves out what its
// command does not carry: omitzero drops an empty string and a nil map, but
// keeps an empty map, so that what a decoder read encodes back to the same
// frame.
//
// The gateway decodes it strictly (unknown members, repeated keys and the
// members of another command are refused): that policy is the edge's, and
// lives there, with the fuzz targets that hold it.
type Command struct {
	Type       string            `json:"type"`
	ID         string            `json:"id"`
	Queue      string            `json:"queue,omitzero"`
	Region     string            `json:"region,omitzero"`
	Attributes map[string]string `json:"attributes,omitzero"`
	TicketID   string            `json:"ticketId,omitzero"`
	MatchID    string            `json:"matchId,omitzero"`
}

// JoinBody is the body of POST /v1/queues/{queue}/tickets, the REST join
// (the queue is in the path); an empty region is the queue's only one.
type JoinBody struct {
	Region     string            `json:"region,omitzero"`
	Attributes map[string]string `json:"attributes,omitzero"`
}
