package protocol

import "github.com/matchgate/matchgate/provider"

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

// Client→server frame types of a provider queue's providers (README
// "Protocol"): a provider goes online, changes its capacity or attributes,
// goes offline, and answers or ends its assignments. They need a provider
// token (role "provider").
const (
	FrameProviderOnline    = "provider.online"
	FrameProviderUpdate    = "provider.update"
	FrameProviderOffline   = "provider.offline"
	FrameAssignmentAccept  = "assignment.accept"
	FrameAssignmentDecline = "assignment.decline"
	FrameAssignmentEnd     = "assignment.end"
)

// ProviderClientFrameTypes are the provider frame types a client may send.
var ProviderClientFrameTypes = []string{FrameProviderOnline, FrameProviderUpdate, FrameProviderOffline,
	FrameAssignmentAccept, FrameAssignmentDecline, FrameAssignmentEnd}

// IsProviderFrame reports whether typ is a provider frame type: those are
// decoded as ProviderCommand, whose attributes are a provider's (an object
// of lists), not a join's (strings by name).
func IsProviderFrame(typ string) bool {
	switch typ {
	case FrameProviderOnline, FrameProviderUpdate, FrameProviderOffline,
		FrameAssignmentAccept, FrameAssignmentDecline, FrameAssignmentEnd:
		return true
	}
	return false
}

// ProviderCommand is a provider frame: provider.online (queue, capacity,
// attributes), provider.update (queue, capacity and attributes optional),
// provider.offline (queue), assignment.accept, .decline and .end
// (assignmentId). As for Command, a client leaves out what its frame does
// not carry, and the gateway refuses the members of another frame.
type ProviderCommand struct {
	Type         string               `json:"type"`
	ID           string               `json:"id"`
	Queue        string               `json:"queue,omitzero"`
	Capacity     *int                 `json:"capacity,omitzero"`
	Attributes   *provider.Attributes `json:"attributes,omitzero"`
	AssignmentID string               `json:"assignmentId,omitzero"`
}

// ProviderBody is the body of PUT /v1/providers/me/{queue} (capacity
// required) and of PATCH (both optional: absent is unchanged).
type ProviderBody struct {
	Capacity   *int                 `json:"capacity,omitzero"`
	Attributes *provider.Attributes `json:"attributes,omitzero"`
}
