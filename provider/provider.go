// Package provider is the domain of two-sided matching: requesters matched
// to providers with capacity (queue kind "provider"). It holds the
// vocabulary — providers and their attributes, requesters and their
// preferences, assignments and their states, the record's contract — with
// no I/O; scoring and assignment are pure functions of a snapshot and the
// time (score.go, assign.go), and the record lives in provider/record.
package provider

import (
	"context"
	"errors"
	"time"
)

// Attributes describe what a provider offers.
type Attributes struct {
	Languages    []string `json:"languages,omitempty"`
	Specialties  []string `json:"specialties,omitempty"` // the first is the primary one
	SessionTypes []string `json:"sessionTypes,omitempty"`
	Rating       float64  `json:"rating"` // 0–5
}

// Preferences are what a requester asks for; an empty field asks nothing.
type Preferences struct {
	Language    string  `json:"language,omitempty"`
	Specialty   string  `json:"specialty,omitempty"`
	SessionType string  `json:"sessionType,omitempty"`
	MinRating   float64 `json:"minRating,omitempty"`
}

// Provider is a provider as a pass sees it.
type Provider struct {
	UserID     string
	Queue      string
	Capacity   int // slots in all; 0 takes nobody
	Used       int // slots held by offered or running assignments
	Attributes Attributes
	Online     bool
	// Held are the assignments holding Used of the slots (Live fills it).
	Held []string
	// LastSeen is when the provider was last known connected (Live fills
	// it; for an online provider, the last refresh).
	LastSeen time.Time
}

// Free is the number of slots a new assignment may take.
func (p Provider) Free() int {
	if !p.Online {
		return 0
	}
	return max(p.Capacity-p.Used, 0)
}

// Requester is a waiting requester as a pass sees it.
type Requester struct {
	TicketID string
	UserID   string
	Queue    string
	Prefs    Preferences
	Enqueued time.Time
	Deadline time.Time
	// Refused are the providers that declined an offer of this requester
	// or let one expire: never offered it again, whatever the relax.
	Refused []string
}

// Wait is how long r has waited at now.
func (r Requester) Wait(now time.Time) time.Duration { return max(now.Sub(r.Enqueued), 0) }

// The constraints a requester's preferences make, by the names the queue
// file's relax entries drop them with.
const (
	ConstraintLanguage    = "language"
	ConstraintSessionType = "sessionType"
	ConstraintMinRating   = "minRating"
	ConstraintSpecialty   = "specialty"
)

// The weighted terms of a score, by their names in the queue file's
// weights and in a score's parts.
const (
	TermSpecialty = "specialty"
	TermRating    = "rating"
	TermLoad      = "load"
	TermWait      = "wait"
)

// Status is an assignment's state: OFFERED → ACCEPTED → ENDED, or OFFERED
// → DECLINED / EXPIRED (the requester goes back in place).
type Status string

const (
	StatusOffered  Status = "OFFERED"
	StatusAccepted Status = "ACCEPTED"
	StatusDeclined Status = "DECLINED"
	StatusExpired  Status = "EXPIRED"
	StatusEnded    Status = "ENDED"
)

// Final reports whether s is an end state.
func (s Status) Final() bool {
	return s == StatusDeclined || s == StatusExpired || s == StatusEnded
}

// Assignment is a requester's ticket given to a provider's slot.
type Assignment struct {
	ID         string
	Queue      string
	TicketID   string
	Requester  string // the requester's user id
	Provider   string // the provider's user id
	Status     Status
	Score      float64
	Parts      map[string]float64 // each term's contribution to Score
	OfferedAt  time.Time
	AcceptBy   time.Time // zero when the queue assigns at once (acceptWindow 0)
	AcceptedAt time.Time
	EndedAt    time.Time
	EndReason  string // "declined", "expired", "ended", "operator", … for a final state
	Version    int64  // bumped by every change
}

// Errors of the record's contract.
var (
	// ErrNotFound: no such assignment.
	ErrNotFound = errors.New("provider: no such assignment")
	// ErrConflict: the assignment is not in the state the change needs
	// (accepting an ended one, ending a declined one), or a version check
	// failed.
	ErrConflict = errors.New("provider: assignment in another state")
	// ErrOverCapacity: the provider's slots are all held.
	ErrOverCapacity = errors.New("provider: at capacity")
	// ErrTicketAssigned: the ticket already holds a live assignment.
	ErrTicketAssigned = errors.New("provider: ticket already assigned")
)

// OfferRequest is one offer of OfferMany: a, within capacity.
type OfferRequest struct {
	Assignment Assignment
	Capacity   int
}

// OfferResult is what became of one offer of OfferMany: the stored
// assignment, or Offer's error.
type OfferResult struct {
	Assignment Assignment
	Err        error
}

// Record is the durable record of assignments, behind every claim of the
// live pool: Offer refuses a second live assignment of one ticket and a
// provider past its capacity, whatever the pool believed, as the tickets'
// record refuses a second match of one ticket.
type Record interface {
	// Offer records a as OFFERED (ACCEPTED when a.AcceptBy is zero) if the
	// ticket holds no live (non-final) assignment and the provider holds
	// fewer than capacity live ones; else ErrTicketAssigned or
	// ErrOverCapacity. A repeat of the same a.ID returns the stored one.
	Offer(ctx context.Context, a Assignment, capacity int) (Assignment, error)
	// OfferMany is Offer for many at once, each decided as Offer decides
	// it, in order: results[i] answers offers[i]. An error for the whole
	// (the record unreachable) is returned alone; nothing is then known of
	// the offers, which a retry of the same ids settles.
	OfferMany(ctx context.Context, offers []OfferRequest) ([]OfferResult, error)
	// Accept moves an OFFERED assignment to ACCEPTED at now if now is
	// before its AcceptBy; ErrConflict otherwise (a repeat on an ACCEPTED
	// one returns it unchanged).
	Accept(ctx context.Context, id string, now time.Time) (Assignment, error)
	// Decline ends an OFFERED assignment as DECLINED; Expire ends the
	// OFFERED ones whose AcceptBy is at or before now as EXPIRED and
	// returns them; End ends an ACCEPTED one as ENDED with reason.
	Decline(ctx context.Context, id string, now time.Time) (Assignment, error)
	Expire(ctx context.Context, queue string, now time.Time, limit int) ([]Assignment, error)
	End(ctx context.Context, id, reason string, now time.Time) (Assignment, error)
	// Get returns one assignment; Live the provider's non-final ones.
	Get(ctx context.Context, id string) (Assignment, error)
	Live(ctx context.Context, queue, providerID string) ([]Assignment, error)
	// Refused returns, for each of ticketIDs that has any, the providers
	// that declined an offer of it or let one expire, in queue: a
	// requester back in the line goes to the next best provider, not to
	// the one that refused it.
	Refused(ctx context.Context, queue string, ticketIDs []string) (map[string][]string, error)
}
