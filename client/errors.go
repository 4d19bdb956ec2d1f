package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/protocol"
)

var (
	// ErrClosed: the client was closed (Close, or stopped for good).
	ErrClosed = errors.New("matchgate client: closed")
	// ErrDisconnected: the socket was lost after the command was sent and
	// before its reply. The server may have acted on it; the hello after
	// the reconnect tells (the state held is updated from it).
	ErrDisconnected = errors.New("matchgate client: connection lost before the reply")
	// ErrDropped: Drop cut the socket (Session.Err, and Err with
	// Options.DisableReconnect).
	ErrDropped = errors.New("matchgate client: socket dropped")
)

// Error is a command the server refused: an error frame's error, or a
// REST error body (Guest).
type Error struct {
	Code    protocol.Code
	Message string
	// TicketID and MatchID name what a conflict concerns (ALREADY_QUEUED:
	// the waiting ticket; ALREADY_MATCHED: the ticket and its match).
	TicketID string
	MatchID  string
	// RetryAfter is when a refused command may succeed (COOLDOWN, rate
	// limits); 0 when the server does not say.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("matchgate: %s: %s", e.Code, e.Message)
}

func errorOf(w *protocol.ClientError) *Error {
	if w == nil {
		return &Error{Code: protocol.CodeInternal, Message: "error frame without an error"}
	}
	return &Error{Code: protocol.Code(w.Code), Message: w.Message, TicketID: w.TicketID, MatchID: w.MatchID,
		RetryAfter: time.Duration(w.RetryAfter) * time.Second}
}

// TerminalError is why the client stopped reconnecting: the server refused
// the user (banned: close code 4403 or HTTP 403), or refused a token that
// the token source gave again (close code 4401 or HTTP 401).
type TerminalError struct {
	// Code is the close code (4401, 4403), or 0 when the upgrade was
	// refused with HTTP Status.
	Code   websocket.StatusCode
	Status int
	Reason string
}

func (e *TerminalError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("matchgate client: closed for good (%d %s)", int(e.Code), e.Reason)
	}
	return fmt.Sprintf("matchgate client: upgrade refused (HTTP %d)", e.Status)
}
