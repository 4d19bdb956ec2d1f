package record

import (
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/internal/pgtime"
	"github.com/matchgate/matchgate/provider"
)

// Both implementations pass every input through the functions of this file
// before touching storage, so that they accept and refuse the same values
// and return identical assignments.

// canonicalID returns id in the form PostgreSQL prints a uuid, so that
// both records find an assignment by any spelling PostgreSQL accepts and
// return the same string. An id that is no UUID names no assignment.
func canonicalID(what, id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", fmt.Errorf("%s %q is not a UUID: %w", what, id, provider.ErrNotFound)
	}
	return u.String(), nil
}

// checkOffer validates a and returns it as the record stores it: ids
// canonical, times stamped, Parts copied (nil when empty), and the fields
// the record owns set: OFFERED at version 1, or ACCEPTED at OfferedAt when
// the queue assigns at once.
func checkOffer(a provider.Assignment, capacity int) (provider.Assignment, error) {
	what := "offer " + a.ID
	switch {
	case a.Queue == "":
		return provider.Assignment{}, fmt.Errorf("%s: no queue", what)
	case a.Requester == "":
		return provider.Assignment{}, fmt.Errorf("%s: no requester", what)
	case a.Provider == "":
		return provider.Assignment{}, fmt.Errorf("%s: no provider", what)
	case capacity < 1:
		return provider.Assignment{}, fmt.Errorf("%s to %s: capacity %d must be positive", what, a.Provider, capacity)
	case a.OfferedAt.IsZero():
		return provider.Assignment{}, fmt.Errorf("%s: no offer time", what)
	case math.IsNaN(a.Score) || math.IsInf(a.Score, 0):
		return provider.Assignment{}, fmt.Errorf("%s: score %v is not a number", what, a.Score)
	}
	for term, v := range a.Parts {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return provider.Assignment{}, fmt.Errorf("%s: part %q = %v is not a number", what, term, v)
		}
	}
	var err error
	if a.ID, err = canonicalID("offer: id", a.ID); err != nil {
		return provider.Assignment{}, err
	}
	if a.TicketID, err = canonicalID(what+": ticket", a.TicketID); err != nil {
		return provider.Assignment{}, err
	}
	a.OfferedAt, a.AcceptBy = pgtime.Stamp(a.OfferedAt), pgtime.Stamp(a.AcceptBy)
	// Compared as stored: a window shorter than a microsecond is none.
	if !a.AcceptBy.IsZero() && !a.AcceptBy.After(a.OfferedAt) {
		return provider.Assignment{}, fmt.Errorf("%s: accept by %v, not after the offer at %v", what, a.AcceptBy, a.OfferedAt)
	}
	a.Parts = cloneParts(a.Parts)
	a.Status, a.AcceptedAt, a.EndedAt, a.EndReason, a.Version = provider.StatusOffered, time.Time{}, time.Time{}, "", 1
	if a.AcceptBy.IsZero() {
		a.Status, a.AcceptedAt = provider.StatusAccepted, a.OfferedAt
	}
	return a, nil
}

// sameOffer reports whether stored is the assignment a repeat of want's
// Offer records: a retry may come later, with another score, but names the
// same ticket and provider.
func sameOffer(stored, want provider.Assignment) bool {
	return stored.Queue == want.Queue && stored.TicketID == want.TicketID &&
		stored.Requester == want.Requester && stored.Provider == want.Provider
}

// repeat answers an Offer whose id the record holds already: the stored
// assignment, whatever became of it, unless the id names another offer.
func repeat(stored, want provider.Assignment) (provider.Assignment, error) {
	if !sameOffer(stored, want) {
		return provider.Assignment{}, fmt.Errorf("offer %s: the id names the offer of ticket %s to %s in %s: %w",
			want.ID, stored.TicketID, stored.Provider, stored.Queue, provider.ErrConflict)
	}
	return stored, nil
}

// cloneParts copies p, so that no caller shares a map with the record; no
// parts are nil, as PostgreSQL's '{}' reads back.
func cloneParts(p map[string]float64) map[string]float64 {
	if len(p) == 0 {
		return nil
	}
	return maps.Clone(p)
}

// checkChange validates the arguments of Accept, Decline and End and
// returns the id canonical and now stamped.
func checkChange(what, id string, now time.Time) (string, time.Time, error) {
	id, err := canonicalID(what+": id", id)
	if err != nil {
		return "", time.Time{}, err
	}
	if now.IsZero() {
		return "", time.Time{}, fmt.Errorf("%s %s: no time", what, id)
	}
	return id, pgtime.Stamp(now), nil
}

// open reports whether an offer answerable until acceptBy is still open at
// now (both stamped): Accept judges by the caller's now, so that what it
// answers does not depend on whether Expire has run yet.
func open(acceptBy, now time.Time) bool { return now.Before(acceptBy) }

func checkExpire(queue string, now time.Time, limit int) error {
	switch {
	case limit <= 0:
		return fmt.Errorf("expire offers of %s: limit %d must be positive", queue, limit)
	case now.IsZero():
		return fmt.Errorf("expire offers of %s: no time", queue)
	}
	return nil
}

// The end reasons the record writes itself.
const (
	reasonDeclined = "declined"
	reasonExpired  = "expired"
)
