package client

import (
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// The statuses of a ticket and of an admission place, as the wire spells
// them.
const (
	StatusWaiting   = protocol.StatusWaiting
	StatusMatched   = protocol.StatusMatched
	StatusCancelled = protocol.StatusCancelled
	StatusExpired   = protocol.StatusExpired

	PositionWaiting    = protocol.PositionWaiting
	PositionReady      = protocol.PositionReady
	PositionNotEntered = protocol.PositionNotEntered
)

// Event is what Events delivers: one of the types below, and no other (the
// interface is sealed by an unexported method). A type switch reads it.
//
// Ticket, match and assignment events are sent only when the state they
// carry is newer than the state held (a higher version), whatever frame
// brought it: a push, a reply, hello or status. A stale frame is not an
// event.
type Event interface{ event() }

// ConnState is the state of the client's connection.
type ConnState int

const (
	// Connecting: a socket is being opened (after Dial, or after a wait).
	Connecting ConnState = iota
	// Open: the socket is up and its hello was read.
	Open
	// Reconnecting: the socket was lost; the next attempt starts after
	// StateEvent.Delay.
	Reconnecting
	// Closed: the client stopped, by Close or for good (StateEvent.Err).
	Closed
)

func (s ConnState) String() string {
	switch s {
	case Connecting:
		return "connecting"
	case Open:
		return "open"
	case Reconnecting:
		return "reconnecting"
	case Closed:
		return "closed"
	}
	return "unknown"
}

// StateEvent is a change of the connection's state. Attempt counts the
// failed attempts since the last hello; Err is why the socket was lost
// (Reconnecting) or the client stopped (Closed; nil after Close).
type StateEvent struct {
	State   ConnState
	Attempt int
	Delay   time.Duration
	Err     error
}

// HelloEvent is a hello frame: the user's state at each (re)connect, or a
// resync the server sends on an open socket. Its tickets and matches are
// merged into the state held before it is delivered.
type HelloEvent struct {
	Hello Hello
	// Reconnect is false for the first hello of the client.
	Reconnect bool
}

// Hello is a hello frame's content.
type Hello struct {
	UserID  string
	Node    string
	Tickets []Ticket
	Matches []Match
	// More and Next: older resolved tickets were left out; GET
	// /v1/tickets?before=Next has them.
	More      bool
	Next      string
	Admission []QueuePosition
	Providers []Provider
}

// TicketEvent is a ticket newer than the one held. Frame is the frame type
// that brought it (ticket.update, joined, cancelled, hello, status), or
// "match.found" and the like when the client marked a WAITING ticket
// MATCHED because its match arrived first.
type TicketEvent struct {
	Frame  string
	Ticket Ticket
}

// MatchEvent is a match newer than the one held. Frame is the frame type
// that brought it (match.found, match.ready, match.dissolved,
// match.update, hello, status); Reason is a dissolution's.
type MatchEvent struct {
	Frame  string
	Match  Match
	Reason string
}

// AdmissionEvent is the user's place in an admission queue, as the client
// now holds it (Client.Admission). At is when it was heard: an ETA counts
// from then.
type AdmissionEvent struct {
	Frame    string
	Queue    string
	Position Position
	At       time.Time
}

// ProviderEvent is a provider's state in one provider queue, as heard in a
// provider reply or hello.
type ProviderEvent struct {
	Frame    string
	Provider Provider
}

// AssignmentEvent is an assignment newer than the one held: a provider's
// reply (assignment), a push (assignment.offered, assignment.update) or
// one listed in a provider view.
type AssignmentEvent struct {
	Frame      string
	Assignment Assignment
}

// RankingEvent is a subscribed board's Top: the subscribed reply and each
// ranking.update push.
type RankingEvent struct {
	Frame   string
	Ranking Ranking
}

// ErrorEvent is an error frame that answers no command of this client
// (no re, or an id it no longer waits for), or a frame it could not decode.
type ErrorEvent struct {
	Err error
}

// GapEvent says the consumer fell behind: Dropped events were thrown away
// because the Events channel was full. The state the client holds is
// complete regardless; read it (Tickets, Matches, Admission, …) to catch
// up.
type GapEvent struct {
	Dropped int
}

func (StateEvent) event()      {}
func (HelloEvent) event()      {}
func (TicketEvent) event()     {}
func (MatchEvent) event()      {}
func (AdmissionEvent) event()  {}
func (ProviderEvent) event()   {}
func (AssignmentEvent) event() {}
func (RankingEvent) event()    {}
func (ErrorEvent) event()      {}
func (GapEvent) event()        {}
