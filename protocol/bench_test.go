package protocol_test

import (
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// BenchmarkMatchFoundEvent is a pair's match.found, built on the pass's
// commit and rendered once when it is published.
func BenchmarkMatchFoundEvent(b *testing.B) {
	at := time.UnixMilli(1755530400000).UTC()
	m := matcher.Match{ID: "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", Queue: "pairs", Region: "global",
		State: matcher.MatchReady, FormedBy: matcher.FormedFilled,
		Players: []matcher.Player{
			{TicketID: "1b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-1", Skill: 1500},
			{TicketID: "2b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-2", Skill: 1510},
		},
		Server: &matcher.Server{Address: "10.0.0.1:7777", Session: "s1"}, CreatedAt: at, Version: 1}
	for b.Loop() {
		protocol.Frame(matcher.MatchFoundEvent(m))
	}
}

// BenchmarkTicketEvent is a ticket.update, built and rendered once per
// join, cancel and match of every ticket.
func BenchmarkTicketEvent(b *testing.B) {
	at := time.UnixMilli(1755530400000).UTC()
	t := matcher.Ticket{ID: "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", UserID: "user-123", Queue: "ranked", Region: "eu",
		Status: matcher.StatusMatched, Skill: 1523.4567, Attributes: map[string]string{"mode": "5v5"},
		EnqueuedAt: at, Deadline: at.Add(5 * time.Minute), MatchID: "1b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d",
		UpdatedAt: at.Add(time.Second), Version: 3}
	for b.Loop() {
		protocol.Frame(matcher.TicketUpdatedEvent(t))
	}
}
