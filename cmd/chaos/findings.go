package main

import (
	"fmt"
)

// Violation kinds. Each names one broken promise; the report counts them.
const (
	vTicketInTwoMatches  = "ticket-in-two-matches"
	vUserTwiceInMatch    = "user-twice-in-match"
	vSeatNotMatched      = "seat-not-matched"   // a seat whose ticket is not MATCHED in that match
	vMatchedNotSeated    = "matched-not-seated" // a MATCHED ticket missing from its match
	vMatchSize           = "match-size"         // seats and bots do not fit the queue and formed_by
	vFallbackEarly       = "fallback-early"     // a FALLBACK room before fallbackAfter
	vStillWaiting        = "still-waiting"      // WAITING after its deadline plus slack
	vResolvedLate        = "resolved-late"      // resolved later than --late-limit after its deadline (when set)
	vExpiredEarly        = "expired-early"      // EXPIRED before its deadline
	vBadOutcome          = "bad-outcome"        // an unknown status, or a resolved ticket with a match id
	vUnrequestedCancel   = "unrequested-cancel" // CANCELLED (user) without a cancel sent
	vEvictedConnected    = "evicted-while-connected"
	vJoinedMissing       = "joined-ticket-missing"
	vDeadlineMoved       = "deadline-moved"
	vToldCancelled       = "told-cancelled-disagrees"
	vToldAlreadyMatched  = "told-already-matched-disagrees"
	vToldAlreadyCanceled = "told-already-cancelled-disagrees"
	vToldNotFound        = "told-not-found-own-ticket"
	vToldAlreadyQueued   = "told-already-queued-disagrees"
	vToldMatchFound      = "told-match-found-disagrees"
	vToldTicketState     = "told-ticket-state-disagrees"
	vMatchFoundMissing   = "match-found-missing"
	vRequestUnanswered   = "request-unanswered"
	vProtocol            = "protocol"
	vPlayerGaveUp        = "player-gave-up"
	vServerCrash         = "server-crash"
	vServerPanic         = "server-panic"
	vDataRace            = "data-race"
	vFaultFailed         = "fault-or-restart-failed"
	vUncleanStop         = "unclean-stop"
	vUnhealthyAtEnd      = "unhealthy-at-end"
	vRetiredUnresolved   = "retired-queue-ticket-late" // a ticket waiting in a retired queue not resolved by its deadline plus --late-limit
	vServerNotAllocated  = "server-not-allocated"      // a match's server that the fleet manager never handed to it
	vReleasedCommitted   = "server-of-committed-match-released"
	vServerTwice         = "server-in-two-matches" // one server in two committed matches
	vServerLeaked        = "server-leaked"         // handed to a match never committed and never released, no kill to explain it
)

// violation is one broken invariant with the evidence to chase it.
type violation struct {
	Kind   string `json:"kind"`
	Ticket string `json:"ticket,omitempty"`
	Match  string `json:"match,omitempty"`
	User   string `json:"user,omitempty"`
	Detail string `json:"detail"`
}

// maxExamples bounds the violations listed per kind; all are counted.
const maxExamples = 10

type findings struct {
	byKind   map[string]int
	examples []violation
}

func newFindings() *findings { return &findings{byKind: map[string]int{}} }

func (f *findings) add(v violation) {
	f.byKind[v.Kind]++
	if f.byKind[v.Kind] <= maxExamples {
		f.examples = append(f.examples, v)
	}
}

func (f *findings) addf(kind, ticket, match, user, format string, args ...any) {
	f.add(violation{Kind: kind, Ticket: ticket, Match: match, User: user, Detail: fmt.Sprintf(format, args...)})
}

func (f *findings) total() int {
	n := 0
	for _, c := range f.byKind {
		n += c
	}
	return n
}
