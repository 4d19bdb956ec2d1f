package protocol_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// The client's view reads what the server sends: every field it has, with
// the server's values, from the server's own encoding.
func TestDecodesTheServersFrames(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	m := matcher.Match{ID: "m1", Queue: "ranked", Region: "eu", State: matcher.MatchReady, FormedBy: matcher.FormedFilled,
		Players: []matcher.Player{{TicketID: "t1", UserID: "u1", Skill: 1500}, {TicketID: "t2", UserID: "u2", Skill: 1510.5}},
		Bots:    1, CreatedAt: at, Version: 1}
	var found protocol.ClientFrame
	if err := json.Unmarshal(protocol.Frame(matcher.MatchFoundEvent(m)), &found); err != nil {
		t.Fatal(err)
	}
	got := found.Match
	if found.Type != protocol.FrameMatchFound || got == nil || got.ID != "m1" || got.Queue != "ranked" || got.Region != "eu" ||
		got.State != matcher.MatchReady || got.FormedBy != matcher.FormedFilled || got.Bots != 1 || !got.CreatedAt.Equal(at) ||
		len(got.Players) != 2 || got.Players[1] != (protocol.ClientSeat{TicketID: "t2", UserID: "u2", Skill: 1510.5}) {
		t.Fatalf("match.found read as %+v", found)
	}

	for _, tk := range []matcher.Ticket{
		{ID: "t1", UserID: "u1", Queue: "ranked", Region: "eu", Status: matcher.StatusMatched, MatchID: "m1",
			EnqueuedAt: at, Deadline: at.Add(time.Minute), UpdatedAt: at, Version: 2},
		{ID: "t2", UserID: "u2", Queue: "ranked", Region: "eu", Status: matcher.StatusCancelled, CancelReason: "user",
			EnqueuedAt: at, Deadline: at.Add(time.Minute), UpdatedAt: at, Version: 3},
	} {
		var f protocol.ClientFrame
		if err := json.Unmarshal(protocol.Frame(matcher.TicketUpdatedEvent(tk)), &f); err != nil {
			t.Fatal(err)
		}
		want := protocol.ClientTicket{ID: tk.ID, UserID: tk.UserID, Queue: tk.Queue, Region: tk.Region, Status: string(tk.Status),
			EnqueuedAt: at, Deadline: at.Add(time.Minute), MatchID: tk.MatchID, CancelReason: tk.CancelReason, Version: tk.Version}
		if f.Type != protocol.FrameTicketUpdate || f.Ticket == nil || !f.Ticket.EnqueuedAt.Equal(want.EnqueuedAt) ||
			!f.Ticket.Deadline.Equal(want.Deadline) {
			t.Fatalf("ticket.update read as %+v", f)
		}
		got := *f.Ticket
		got.EnqueuedAt, got.Deadline = want.EnqueuedAt, want.Deadline
		if got != want {
			t.Fatalf("ticket read as %+v, want %+v", got, want)
		}
	}
}

// The client's statuses are the server's.
func TestStatusesAreTheServers(t *testing.T) {
	for got, want := range map[string]matcher.TicketStatus{
		protocol.StatusWaiting: matcher.StatusWaiting, protocol.StatusMatched: matcher.StatusMatched,
		protocol.StatusCancelled: matcher.StatusCancelled, protocol.StatusExpired: matcher.StatusExpired,
	} {
		if got != string(want) {
			t.Errorf("client status %q, server %q", got, want)
		}
	}
}

// The client's view reads the admission queue's frames: a reply's place,
// a push's queue and place, an admission's token.
func TestDecodesTheAdmissionFrames(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	waiting := protocol.PositionOf(admission.Position{Status: admission.StatusWaiting, Rank: 3, Total: 9,
		ETA: admission.ETA{Seconds: 4, Low: 2, High: math.Inf(1)}, PollAfter: 2 * time.Second})
	var f protocol.ClientFrame
	if err := json.Unmarshal(protocol.Reply{Type: protocol.FrameEntered, Re: "r1", Position: &waiting}.AppendJSON(nil), &f); err != nil {
		t.Fatal(err)
	}
	p := f.Position
	if f.Type != protocol.FrameEntered || f.Re != "r1" || p == nil || p.Status != protocol.PositionWaiting || p.Rank != 3 ||
		p.Total != 9 || p.PollAfter != 2 || p.ETA == nil || p.ETA.Seconds != 4 || p.ETA.Low != 2 || p.ETA.High != nil {
		t.Fatalf("entered read as %+v (position %+v)", f, p)
	}

	f = protocol.ClientFrame{}
	if err := json.Unmarshal(protocol.AppendAdmissionPosition(nil, "drop", waiting), &f); err != nil {
		t.Fatal(err)
	}
	if f.Type != protocol.FrameAdmissionPosition || f.Queue != "drop" || f.Position == nil || f.Position.Rank != 3 {
		t.Fatalf("admission.position read as %+v", f)
	}

	f = protocol.ClientFrame{}
	if err := json.Unmarshal(protocol.AppendAdmissionReady(nil, "drop", "tok", at), &f); err != nil {
		t.Fatal(err)
	}
	if f.Type != protocol.FrameAdmissionReady || f.Queue != "drop" || f.Token != "tok" || !f.ExpiresAt.Equal(at) {
		t.Fatalf("admission.ready read as %+v", f)
	}

	ready := protocol.PositionOf(admission.Position{Status: admission.StatusReady, Token: "tok", ExpiresAt: at})
	var body struct {
		Position protocol.ClientPosition `json:"position"`
	}
	if err := json.Unmarshal(mustJSON(t, protocol.PositionBody{Position: ready}), &body); err != nil {
		t.Fatal(err)
	}
	if body.Position.Status != protocol.PositionReady || body.Position.Token != "tok" || !body.Position.ExpiresAt.Equal(at) {
		t.Fatalf("READY read as %+v", body.Position)
	}
}

// A provider match reads with its provider seat; any other match without one.
func TestDecodesTheProviderSeat(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	by := at.Add(10 * time.Second)
	m := matcher.Match{ID: "m1", Queue: "tutor", Region: "eu", State: matcher.MatchPendingAccept, FormedBy: matcher.FormedFilled,
		Players:  []matcher.Player{{TicketID: "t1", UserID: "req", Skill: 1500}},
		Provider: &matcher.ProviderSeat{UserID: "prov", Score: 0.82, Parts: map[string]float64{"specialty": 0.4, "rating": 0.42}},
		AcceptBy: &by, CreatedAt: at, Version: 1}
	var f protocol.ClientFrame
	if err := json.Unmarshal(protocol.Frame(matcher.MatchFoundEvent(m)), &f); err != nil {
		t.Fatal(err)
	}
	p := f.Match.Provider
	if p == nil || p.UserID != "prov" || p.Score != 0.82 || len(p.Parts) != 2 || p.Parts["specialty"] != 0.4 || p.Parts["rating"] != 0.42 {
		t.Fatalf("provider read as %+v", p)
	}
	if len(f.Match.Players) != 1 || f.Match.Players[0].UserID != "req" {
		t.Fatalf("players read as %+v", f.Match.Players)
	}

	m.Provider = nil
	f = protocol.ClientFrame{}
	if err := json.Unmarshal(protocol.Frame(matcher.MatchFoundEvent(m)), &f); err != nil {
		t.Fatal(err)
	}
	if f.Match.Provider != nil {
		t.Fatalf("a match without a provider read one: %+v", f.Match.Provider)
	}
}
