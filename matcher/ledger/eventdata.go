package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
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

// eventData is the data's shape: encodeEvent writes it, decodeEvent reads
// it with encoding/json.
type eventData struct {
	V      int             `json:"v"`
	Kind   string          `json:"kind"`
	Ticket *matcher.Ticket `json:"ticket,omitempty"`
	Match  *matcher.Match  `json:"match,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// encodeEvent is e's data, as the payload column stores it: the bytes
// json.Marshal writes of its eventData (the tests hold it to that), written
// by hand because every commit writes one per event, and encoding/json cost
// a match 3.3 µs and 5 allocations on the commit's path.
func encodeEvent(e matcher.Event) ([]byte, error) {
	kind, ok := eventKinds[e.Kind]
	if !ok {
		return nil, fmt.Errorf("encode event: unknown kind %d", e.Kind)
	}
	size := matchDataCap
	if e.Kind == matcher.EventTicketUpdated {
		size = ticketDataCap
	}
	b := make([]byte, 0, size)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, eventDataVersion, 10)
	b = append(b, `,"kind":`...)
	b = protocol.AppendJSONString(b, kind)
	var err error
	if e.Kind == matcher.EventTicketUpdated {
		b = append(b, `,"ticket":`...)
		b, err = appendTicketData(b, &e.Ticket)
	} else {
		b = append(b, `,"match":`...)
		b, err = appendMatchData(b, &e.Match)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", kind, err)
	}
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = protocol.AppendJSONString(b, e.Reason)
	}
	return append(b, '}'), nil
}

// ticketDataCap and matchDataCap hold a ticket's data and a pair's match
// data in one allocation (both are size classes of the allocator): with
// UUIDs for ids, a ticket is some 400 bytes, a pair's match 500 to 700.
const (
	ticketDataCap = 512
	matchDataCap  = 768
)

// appendTicketData appends t as json.Marshal writes a matcher.Ticket.
func appendTicketData(b []byte, t *matcher.Ticket) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = protocol.AppendJSONString(b, t.ID)
	b = append(b, `,"userId":`...)
	b = protocol.AppendJSONString(b, t.UserID)
	if t.Name != "" {
		b = append(b, `,"name":`...)
		b = protocol.AppendJSONString(b, t.Name)
	}
	b = append(b, `,"queue":`...)
	b = protocol.AppendJSONString(b, t.Queue)
	b = append(b, `,"region":`...)
	b = protocol.AppendJSONString(b, t.Region)
	b = append(b, `,"status":`...)
	b = protocol.AppendJSONString(b, string(t.Status))
	b = append(b, `,"skill":`...)
	if b, err = appendFloat(b, t.Skill); err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	b = append(b, `,"estimated":`...)
	b = strconv.AppendBool(b, t.Estimated)
	if len(t.Attributes) > 0 {
		b = append(b, `,"attributes":`...)
		b = protocol.AppendJSONStringMap(b, t.Attributes)
	}
	b = append(b, `,"enqueuedAt":`...)
	if b, err = appendTime(b, t.EnqueuedAt); err != nil {
		return nil, fmt.Errorf("enqueuedAt: %w", err)
	}
	b = append(b, `,"deadline":`...)
	if b, err = appendTime(b, t.Deadline); err != nil {
		return nil, fmt.Errorf("deadline: %w", err)
	}
	if t.MatchID != "" {
		b = append(b, `,"matchId":`...)
		b = protocol.AppendJSONString(b, t.MatchID)
	}
	if t.CancelReason != "" {
		b = append(b, `,"cancelReason":`...)
		b = protocol.AppendJSONString(b, t.CancelReason)
	}
	b = append(b, `,"updatedAt":`...)
	if b, err = appendTime(b, t.UpdatedAt); err != nil {
		return nil, fmt.Errorf("updatedAt: %w", err)
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, t.Version, 10)
	return append(b, '}'), nil
}

// appendMatchData appends m as json.Marshal writes a matcher.Match.
func appendMatchData(b []byte, m *matcher.Match) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = protocol.AppendJSONString(b, m.ID)
	b = append(b, `,"queue":`...)
	b = protocol.AppendJSONString(b, m.Queue)
	b = append(b, `,"region":`...)
	b = protocol.AppendJSONString(b, m.Region)
	b = append(b, `,"state":`...)
	b = protocol.AppendJSONString(b, m.State)
	b = append(b, `,"formedBy":`...)
	b = protocol.AppendJSONString(b, m.FormedBy)
	b = append(b, `,"players":`...)
	if m.Players == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range m.Players {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"ticketId":`...)
			b = protocol.AppendJSONString(b, p.TicketID)
			b = append(b, `,"userId":`...)
			b = protocol.AppendJSONString(b, p.UserID)
			if p.Name != "" {
				b = append(b, `,"name":`...)
				b = protocol.AppendJSONString(b, p.Name)
			}
			b = append(b, `,"skill":`...)
			if b, err = appendFloat(b, p.Skill); err != nil {
				return nil, fmt.Errorf("player %d skill: %w", i, err)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.Provider != nil {
		// Checked here, not left to the protocol's appender: the data
		// must refuse what json.Marshal refuses.
		if !finite(m.Provider.Score) {
			return nil, fmt.Errorf("provider score: %v is not a JSON number", m.Provider.Score)
		}
		for k, v := range m.Provider.Parts {
			if !finite(v) {
				return nil, fmt.Errorf("provider part %q: %v is not a JSON number", k, v)
			}
		}
		b = append(b, `,"provider":`...)
		b = protocol.AppendProviderSeat(b, m.Provider)
	}
	b = append(b, `,"bots":`...)
	b = strconv.AppendInt(b, int64(m.Bots), 10)
	b = append(b, `,"spread":`...)
	if b, err = appendFloat(b, m.Spread); err != nil {
		return nil, fmt.Errorf("spread: %w", err)
	}
	b = append(b, `,"server":`...)
	if m.Server == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"address":`...)
		b = protocol.AppendJSONString(b, m.Server.Address)
		b = append(b, `,"session":`...)
		b = protocol.AppendJSONString(b, m.Server.Session)
		b = append(b, '}')
	}
	b = append(b, `,"acceptBy":`...)
	if m.AcceptBy == nil {
		b = append(b, "null"...)
	} else if b, err = appendTime(b, *m.AcceptBy); err != nil {
		return nil, fmt.Errorf("acceptBy: %w", err)
	}
	b = append(b, `,"accepted":`...)
	if m.Accepted == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, u := range m.Accepted {
			if i > 0 {
				b = append(b, ',')
			}
			b = protocol.AppendJSONString(b, u)
		}
		b = append(b, ']')
	}
	b = append(b, `,"createdAt":`...)
	if b, err = appendTime(b, m.CreatedAt); err != nil {
		return nil, fmt.Errorf("createdAt: %w", err)
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, m.Version, 10)
	return append(b, '}'), nil
}

// appendTime appends t as time.Time's MarshalJSON writes it (RFC 3339 with
// nanoseconds and t's own offset), refusing what it refuses: a year of
// more than four digits, an offset of a day or more.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

// appendFloat appends f as json.Marshal writes a float64, refusing NaN and
// ±Inf as it does.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a JSON number", f)
	}
	return protocol.AppendJSONFloat(b, f), nil
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
