package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/matchgate/matchgate/matcher"
)

// The outbox's payload column holds an event as data, not as a frame: a
// versioned JSON of the domain event, rendered into a frame only when it is
// published. Version 1 is eventData; a change of its meaning is a new
// version, read alongside the old ones for as long as rows of those may
// still wait in an outbox.
const eventDataVersion = 1

// eventKinds name the kinds in the data; a name, once written, is never
// reused for another meaning.
var eventKinds = map[matcher.EventKind]string{
	matcher.EventTicketUpdated:  "ticket.updated",
	matcher.EventMatchFound:     "match.found",
	matcher.EventMatchReady:     "match.ready",
	matcher.EventMatchDissolved: "match.dissolved",
}

type eventData struct {
	V      int             `json:"v"`
	Kind   string          `json:"kind"`
	Ticket *matcher.Ticket `json:"ticket,omitempty"`
	Match  *matcher.Match  `json:"match,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// encodeEvent is e's data, as the payload column stores it.
func encodeEvent(e matcher.Event) ([]byte, error) {
	kind, ok := eventKinds[e.Kind]
	if !ok {
		return nil, fmt.Errorf("encode event: unknown kind %d", e.Kind)
	}
	d := eventData{V: eventDataVersion, Kind: kind, Reason: e.Reason}
	if e.Kind == matcher.EventTicketUpdated {
		d.Ticket = &e.Ticket
	} else {
		d.Match = &e.Match
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", kind, err)
	}
	return b, nil
}

// legacyKinds are the frame types the outbox held before it held data.
var legacyKinds = map[string]matcher.EventKind{
	"ticket.update":   matcher.EventTicketUpdated,
	"match.found":     matcher.EventMatchFound,
	"match.ready":     matcher.EventMatchReady,
	"match.dissolved": matcher.EventMatchDissolved,
}

// decodeEvent reads a payload back into e (its Kind, Ticket, Match and
// Reason). Rows written before the outbox held data hold the finished frame
// ({"type":…}): they are read as the event the frame reports, whose frame
// renders again as it was (the wire shape keeps every field it shows), so an
// outbox left over from an upgrade is published as before.
func decodeEvent(payload []byte, e *matcher.Event) error {
	if bytes.HasPrefix(payload, []byte(`{"type":`)) {
		var f struct {
			Type   string         `json:"type"`
			Ticket matcher.Ticket `json:"ticket"`
			Match  matcher.Match  `json:"match"`
			Reason string         `json:"reason"`
		}
		if err := json.Unmarshal(payload, &f); err != nil {
			return fmt.Errorf("decode outbox frame: %w", err)
		}
		kind, ok := legacyKinds[f.Type]
		if !ok {
			return fmt.Errorf("decode outbox frame: unknown type %q", f.Type)
		}
		e.Kind, e.Ticket, e.Match, e.Reason = kind, f.Ticket, f.Match, f.Reason
		return nil
	}
	var d eventData
	if err := json.Unmarshal(payload, &d); err != nil {
		return fmt.Errorf("decode outbox event: %w", err)
	}
	if d.V != eventDataVersion {
		return fmt.Errorf("decode outbox event: version %d", d.V)
	}
	for k, name := range eventKinds {
		if name == d.Kind {
			e.Kind = k
		}
	}
	if e.Kind == 0 {
		return fmt.Errorf("decode outbox event: unknown kind %q", d.Kind)
	}
	if d.Ticket != nil {
		e.Ticket = *d.Ticket
	}
	if d.Match != nil {
		e.Match = *d.Match
	}
	e.Reason = d.Reason
	return nil
}
