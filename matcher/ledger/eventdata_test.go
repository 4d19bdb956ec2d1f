package ledger

import (
	"bytes"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

func sampleMatch() matcher.Match {
	at := time.UnixMilli(1755530400000).UTC()
	acceptBy := at.Add(10 * time.Second)
	return matcher.Match{ID: "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", Queue: "pairs", Region: "global",
		State: matcher.MatchReady, FormedBy: matcher.FormedFilled,
		Players: []matcher.Player{
			{TicketID: "1b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-1", Skill: 1500},
			{TicketID: "2b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-2", Skill: 1510},
		},
		Server: &matcher.Server{Address: "10.0.0.1:7777", Session: "s1"}, AcceptBy: &acceptBy,
		Accepted: []string{"user-1"}, CreatedAt: at, Version: 1}
}

func sampleTicket() matcher.Ticket {
	at := time.UnixMilli(1755530400000).UTC()
	return matcher.Ticket{ID: "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-<123>", Queue: "ranked", Region: "eu",
		Status: matcher.StatusCancelled, Skill: 1523.4567, Attributes: map[string]string{"mode": "5v5"},
		EnqueuedAt: at, Deadline: at.Add(5 * time.Minute), CancelReason: "user",
		UpdatedAt: at.Add(1234567 * time.Microsecond), Version: 3}
}

func sampleEvents() []matcher.Event {
	m := sampleMatch()
	return []matcher.Event{
		matcher.TicketUpdatedEvent(sampleTicket()), matcher.MatchFoundEvent(m),
		matcher.MatchReadyEvent(m), matcher.MatchDissolvedEvent(m, matcher.ReasonDeclined),
	}
}

// An event stored as data reads back as the same event, and renders the
// same frame as the event the ledger returned at the commit.
func TestEventDataRoundTrip(t *testing.T) {
	for _, e := range sampleEvents() {
		b, err := encodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte(`{"v":1,`)) {
			t.Errorf("data %s: not versioned", b)
		}
		var got matcher.Event
		if err := decodeEvent(b, &got); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if got.Kind != e.Kind || got.Reason != e.Reason || !bytes.Equal(protocol.Frame(got), protocol.Frame(e)) {
			t.Errorf("kind %d: read back as %+v\n got %s\nwant %s", e.Kind, got, protocol.Frame(got), protocol.Frame(e))
		}
	}
}

// A row the previous version wrote holds the finished frame: it is read as
// its event and published byte for byte as it was written.
func TestLegacyFrameRowsRenderAsBefore(t *testing.T) {
	for _, e := range sampleEvents() {
		frame := protocol.Frame(e) // what the previous version stored
		var got matcher.Event
		if err := decodeEvent(frame, &got); err != nil {
			t.Fatalf("decode %s: %v", frame, err)
		}
		if got.Kind != e.Kind || !bytes.Equal(protocol.Frame(got), frame) {
			t.Errorf("legacy row\n got %s\nwant %s", protocol.Frame(got), frame)
		}
	}
	for _, bad := range []string{`{"type":"nope"}`, `{"v":2,"kind":"match.found"}`, `{"v":1,"kind":"nope"}`, `garbage`} {
		var e matcher.Event
		if err := decodeEvent([]byte(bad), &e); err == nil {
			t.Errorf("%s: decoded as %+v", bad, e)
		}
	}
}

// BenchmarkMatchFoundData is what the PostgreSQL ledger adds to a commit
// per match: the event's data for the outbox row.
func BenchmarkMatchFoundData(b *testing.B) {
	e := matcher.MatchFoundEvent(sampleMatch())
	for b.Loop() {
		if _, err := encodeEvent(e); err != nil {
			b.Fatal(err)
		}
	}
}
