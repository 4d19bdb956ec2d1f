package protocol

import "github.com/matchgate/matchgate/matcher"

// Reply is the answer to a command: joined and cancelled (a ticket),
// match.update (a match), entered and position (a place in an admission
// queue), pong and left (nothing) and error. Re is the id of the
// command it answers, absent when that id could not be read. Every command
// gets one, so it is written by AppendJSON, not json.Marshal.
type Reply struct {
	Type   string      `json:"type"`
	Re     string      `json:"re,omitempty"`
	Ticket *WireTicket `json:"ticket,omitempty"`
	Match  *WireMatch  `json:"match,omitempty"`
	// Position is the place of an entered or position reply.
	Position *WirePosition `json:"position,omitempty"`
	Error    *WireError    `json:"error,omitempty"`
}

// SizeHint is a capacity that holds r in one allocation without keeping
// much spare in a send queue: a pong is some 30 bytes, a joined about 450
// and a pair's match.update up to about 650.
func (r Reply) SizeHint() int {
	switch {
	case r.Error != nil:
		return 128 + len(r.Re) + len(r.Error.Message)
	case r.Match != nil:
		return matchJSONCap
	case r.Ticket != nil:
		return ticketJSONCap
	case r.Position != nil:
		return positionJSONCap
	}
	return 64 + len(r.Re)
}

// WireError is the error member of an error frame and of a REST error
// body (ErrorBody). The ids name what a conflict concerns (ALREADY_QUEUED:
// the waiting ticket; ALREADY_MATCHED: the ticket and its match).
type WireError struct {
	Code     Code   `json:"code"`
	Message  string `json:"message"`
	TicketID string `json:"ticketId,omitempty"`
	MatchID  string `json:"matchId,omitempty"`
	// RetryAfter is the Retry-After of a 429 or 503 in whole seconds, for
	// WebSocket clients that see no header.
	RetryAfter int `json:"retryAfter,omitempty"`
}

// ErrorBody is the body of every REST error, sent with the code's HTTP
// status (CodeOf).
type ErrorBody struct {
	Error WireError `json:"error"`
}

// State is hello (the catch-up every socket gets first, with the user and
// the node) and status (the reply to the status command, with re): the
// user's live tickets, its most recently resolved ones and their matches.
// More and Next: older resolved tickets were left out; GET
// /v1/tickets?before=Next has them.
type State struct {
	Type   string `json:"type"`
	Re     string `json:"re,omitempty"`
	UserID string `json:"userId,omitempty"`
	Node   string `json:"node,omitempty"`
	History
	// Admission holds hello's live admission places of the user.
	Admission []WireQueuePosition `json:"admission,omitempty"`
	// Providers holds a provider's hello: its state in each provider
	// queue (absent for a player's token).
	Providers []ProviderView `json:"providers,omitempty"`
}

// StateOf is st as a frame of type typ answering re ("" for hello).
func StateOf(typ, re string, st matcher.UserState) State {
	return State{Type: typ, Re: re, History: HistoryOf(st)}
}

// TicketBody is the REST answer holding one ticket: the join's and the
// cancel's.
type TicketBody struct {
	Ticket WireTicket `json:"ticket"`
}

// MatchBody is the REST answer of an accept or a decline.
type MatchBody struct {
	Match WireMatch `json:"match"`
}

// QueuesBody is the body of GET /v1/queues: the matched queues, then the
// admission queues (WireQueue).
type QueuesBody struct {
	Queues []WireQueue `json:"queues"`
}

// Server→client frame types of a provider queue's providers: the replies
// to the provider frames, and the pushes of its offers (ProviderFrame).
const (
	// FrameProvider answers provider.online, .update and .offline.
	FrameProvider = "provider"
	// FrameAssignment answers assignment.accept, .decline and .end.
	FrameAssignment        = "assignment"
	FrameAssignmentOffered = "assignment.offered"
	FrameAssignmentUpdate  = "assignment.update"
)

// ProviderServerFrameTypes are the provider frame types the server sends.
var ProviderServerFrameTypes = []string{FrameProvider, FrameAssignment, FrameAssignmentOffered, FrameAssignmentUpdate}

// ProviderReply answers a provider frame: provider (a ProviderView) or
// assignment (an AssignmentView). It is not a hot path: encoding/json
// writes it.
type ProviderReply struct {
	Type       string          `json:"type"`
	Re         string          `json:"re,omitempty"`
	Provider   *ProviderView   `json:"provider,omitempty"`
	Assignment *AssignmentView `json:"assignment,omitempty"`
}

// ProviderViewBody is the REST answer holding a provider's view: GET, PUT,
// PATCH and DELETE of /v1/providers/me/{queue}.
type ProviderViewBody struct {
	Provider ProviderView `json:"provider"`
}

// AssignmentBody is the REST answer of POST
// /v1/assignments/{id}/accept, decline and end.
type AssignmentBody struct {
	Assignment AssignmentView `json:"assignment"`
}
