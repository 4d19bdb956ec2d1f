package matcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Code is the kind of a domain error: what went wrong, as the caller must
// act on it. It is not a wire string: the protocol package names each kind
// on the wire and picks its HTTP status (README "Protocol"). It is not a
// byte either, so that go vet refuses string(code), which would make a rune
// of it rather than a wire code.
type Code uint16

const (
	// CodeInternal is the zero Code: an error of no known kind is internal.
	CodeInternal Code = iota
	CodeBadRequest
	CodeUnauthorized
	CodeForbidden
	CodeUnknownQueue
	CodeAlreadyQueued
	CodeAlreadyMatched
	CodeAlreadyCancelled
	CodeNotFound
	CodeRateLimited
	CodeCooldown
	CodeUnavailable
	// CodeAdmissionRequired: the queue stands behind an admission queue,
	// and the user holds no READY token there.
	CodeAdmissionRequired
	numCodes
)

// codeNames are the kinds as logs show them.
var codeNames = [numCodes]string{
	CodeInternal: "internal", CodeBadRequest: "bad request", CodeUnauthorized: "unauthorized",
	CodeForbidden: "forbidden", CodeUnknownQueue: "unknown queue", CodeAlreadyQueued: "already queued",
	CodeAlreadyMatched: "already matched", CodeAlreadyCancelled: "already cancelled",
	CodeNotFound: "not found", CodeRateLimited: "rate limited", CodeCooldown: "cooldown",
	CodeUnavailable: "unavailable", CodeAdmissionRequired: "admission required",
}

// Codes lists every Code, for the tables that must name them all.
func Codes() []Code {
	cs := make([]Code, numCodes)
	for i := range cs {
		cs[i] = Code(i)
	}
	return cs
}

func (c Code) String() string {
	if c < numCodes {
		return codeNames[c]
	}
	return "code " + strconv.Itoa(int(c))
}

// Error is a domain error: a code, a human message, and the ids a client needs
// to act on it (the ticket it already has, the match that won a race).
type Error struct {
	Code     Code
	Message  string
	TicketID string
	MatchID  string
	// Retry, when positive, is how long the client should wait before
	// trying again (the Retry-After of a 429 COOLDOWN).
	Retry time.Duration
	cause error // logged by the edge, never shown to clients
}

// RetryAfter is how long to wait before retrying; 0 means the edge's default.
func (e *Error) RetryAfter() time.Duration { return e.Retry }

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Code.String() + ": " + e.Message + ": " + e.cause.Error()
	}
	return e.Code.String() + ": " + e.Message
}

// Unwrap exposes the cause of an UNAVAILABLE error to logs.
func (e *Error) Unwrap() error { return e.cause }

// Errorf builds a domain error.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, or CodeInternal when err is not a domain error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Sentinel causes returned by ledgers, wrapped with context.
var (
	// ErrNotFound: no such ticket or match.
	ErrNotFound = errors.New("not found")
	// ErrStaleEpoch: the committing matcher no longer holds the partition lease.
	ErrStaleEpoch = errors.New("stale lease epoch")
)

// AlreadyQueuedError is returned by Ledger.CreateTicket when the user already
// has a WAITING ticket; Existing is that ticket.
type AlreadyQueuedError struct{ Existing Ticket }

func (e *AlreadyQueuedError) Error() string {
	return "user " + e.Existing.UserID + " already has waiting ticket " + e.Existing.ID
}

// AlreadyMatchedError is returned by Ledger.CreateTicket when the user is
// seated in a PENDING_ACCEPT match: a player answers one match before
// joining again (README, "One live match at a time"). MatchID is that match.
type AlreadyMatchedError struct{ UserID, MatchID string }

func (e *AlreadyMatchedError) Error() string {
	return "user " + e.UserID + " has match " + e.MatchID + " waiting for its accepts"
}

// NotWaitingError is returned when a compare-and-set on WAITING finds the
// ticket already resolved; Ticket is its current state.
type NotWaitingError struct{ Ticket Ticket }

func (e *NotWaitingError) Error() string {
	return "ticket " + e.Ticket.ID + " is " + string(e.Ticket.Status)
}

// ShortfallError is returned by Ledger.CommitMatches when not every ticket was
// still WAITING; nothing was written. Waiting lists the tickets that still are.
type ShortfallError struct{ Waiting []string }

func (e *ShortfallError) Error() string {
	return fmt.Sprintf("claim shortfall: %d tickets still waiting", len(e.Waiting))
}

// MatchStateError is returned by Ledger.Accept and Ledger.Dissolve when the
// match is not in a state the operation applies to: no longer
// PENDING_ACCEPT, its accept window already closed (accept, decline) or not
// yet closed (dissolving for a timeout). Match is its current state.
type MatchStateError struct {
	Match  Match
	Reason string
}

func (e *MatchStateError) Error() string {
	return "match " + e.Match.ID + " is " + e.Match.State + ": " + e.Reason
}

// Transient reports whether err looks like a dependency being unreachable or
// too slow (network failure, refused connection, timeout) rather than a bug:
// the caller should answer UNAVAILABLE with a retry hint, not INTERNAL.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// Unavailable turns a transient failure into the domain's UNAVAILABLE error
// and leaves anything else as it is.
func Unavailable(err error) error {
	if Transient(err) {
		return &Error{Code: CodeUnavailable, Message: "a dependency is unreachable; retry shortly", cause: err}
	}
	return err
}

// WithCause is an error of code whose message is the clients' and whose
// cause is for the logs only.
func WithCause(code Code, message string, cause error) *Error {
	return &Error{Code: code, Message: message, cause: cause}
}
