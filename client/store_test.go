package client

import (
	"testing"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

func ticket(id string, status string, version int64) Ticket {
	return Ticket{ClientTicket: protocol.ClientTicket{ID: id, Status: status, Version: version, Queue: "pairs"}}
}

func match(id, state string, version int64, tickets ...string) Match {
	m := Match{ClientMatch: protocol.ClientMatch{ID: id, State: state, Queue: "pairs"}, Version: version}
	for _, t := range tickets {
		m.Players = append(m.Players, protocol.ClientSeat{TicketID: t})
	}
	return m
}

// A frame with a version not above the one held changes nothing, in
// either order of arrival.
func TestStoreKeepsHighestVersion(t *testing.T) {
	s := newStore()
	if !s.putTicket(ticket("t1", StatusWaiting, 1)) {
		t.Fatal("first ticket not stored")
	}
	if !s.putTicket(ticket("t1", StatusCancelled, 3)) {
		t.Fatal("newer ticket not stored")
	}
	for _, v := range []int64{1, 2, 3} {
		if s.putTicket(ticket("t1", StatusWaiting, v)) {
			t.Fatalf("stale ticket v%d stored", v)
		}
	}
	if got := s.tickets["t1"]; got.Status != StatusCancelled || got.Version != 3 {
		t.Fatalf("held %+v", got)
	}

	if ok, _ := s.putMatch(match("m1", MatchReady, 5, "t2")); !ok {
		t.Fatal("match not stored")
	}
	if ok, _ := s.putMatch(match("m1", MatchPendingAccept, 4, "t2")); ok {
		t.Fatal("stale match stored")
	}
	if got := s.matches["m1"]; got.State != MatchReady || got.Version != 5 {
		t.Fatalf("held %+v", got)
	}
	if !s.putAssignment(Assignment{ID: "a1", Status: "ACCEPTED", Version: 2}) || s.putAssignment(Assignment{ID: "a1", Status: "OFFERED", Version: 1}) {
		t.Fatal("assignment versions not kept")
	}
	if s.putTicket(Ticket{}) || s.putAssignment(Assignment{}) {
		t.Fatal("an object without an id was stored")
	}
}

// A match seats its WAITING tickets whichever arrives first; the ticket
// keeps its own version, so the server's later word on it still wins, and
// a dissolved match seats nobody.
func TestStoreSeatsTickets(t *testing.T) {
	s := newStore()
	s.putTicket(ticket("t1", StatusWaiting, 1))
	_, seated := s.putMatch(match("m1", MatchPendingAccept, 1, "t1", "t9"))
	if len(seated) != 1 || seated[0].Status != StatusMatched || seated[0].MatchID != "m1" || seated[0].Version != 1 {
		t.Fatalf("seated %+v", seated)
	}
	// The match first, then the ticket's WAITING state (a reply that was
	// overtaken by the push).
	s.putMatch(match("m2", MatchReady, 1, "t2"))
	s.putTicket(ticket("t2", StatusWaiting, 1))
	if got := s.tickets["t2"]; got.Status != StatusMatched || got.MatchID != "m2" {
		t.Fatalf("t2 held %+v", got)
	}
	// The server's newer ticket wins over the seat.
	if !s.putTicket(ticket("t1", StatusWaiting, 2)) {
		t.Fatal("newer ticket refused")
	}
	s.putMatch(match("m1", MatchDissolved, 2, "t1"))
	s.putTicket(ticket("t1", StatusWaiting, 3))
	if got := s.tickets["t1"]; got.Status != StatusWaiting {
		t.Fatalf("t1 after its match dissolved: %+v", got)
	}
}

// A place has no version: a WAITING place heard in a reply or a push does
// not replace a live READY one; enter and hello always do, and so does
// anything once the READY token's life has ended.
func TestStoreAdmissionPlaces(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newStore()
	ready := Position{Status: PositionReady, Token: "tok", ExpiresAt: now.Add(time.Minute)}
	waiting := Position{Status: PositionWaiting, Rank: 3}
	if !s.putAdmission("room", waiting, fromEnter, now) || !s.putAdmission("room", ready, fromPush, now) {
		t.Fatal("places not stored")
	}
	for _, src := range []placeSource{fromReply, fromPush} {
		if s.putAdmission("room", waiting, src, now) {
			t.Fatalf("a stale WAITING (source %d) replaced READY", src)
		}
	}
	if !s.putAdmission("room", waiting, fromHello, now) {
		t.Fatal("hello did not replace READY")
	}
	s.putAdmission("room", ready, fromPush, now)
	if !s.putAdmission("room", waiting, fromReply, now.Add(2*time.Minute)) {
		t.Fatal("an expired READY was kept")
	}
	// hello lists the live places: one it leaves out ended meanwhile.
	s.putAdmission("other", waiting, fromEnter, now)
	changed := s.helloAdmissions([]QueuePosition{{Queue: "room", Position: ready}}, now)
	if len(changed) != 2 || s.admissions["other"].Status != PositionNotEntered || s.admissions["room"].Status != PositionReady {
		t.Fatalf("after hello: %v %+v", changed, s.admissions)
	}
}

// A stale frame reaching the client is merged into nothing and is no
// event.
func TestClientIgnoresStaleFrames(t *testing.T) {
	c := &Client{st: newStore(), events: make(chan Event, 16), pending: map[string]*pending{}, subs: map[rankKey]*rankSub{},
		opts: Options{}.withDefaults()}
	newer := match("m1", MatchReady, 3, "t1")
	c.handle(frame{Type: protocol.FrameMatchReady, Match: &newer})
	older := match("m1", MatchPendingAccept, 2, "t1")
	c.handle(frame{Type: protocol.FrameMatchFound, Match: &older})
	c.handle(frame{Type: protocol.FrameHello, Matches: []Match{older}, Tickets: []Ticket{ticket("t1", StatusWaiting, 1)}})
	if m, _ := c.Match("m1"); m.Version != 3 || m.State != MatchReady {
		t.Fatalf("held %+v", m)
	}
	var got []string
	for len(c.events) > 0 {
		switch e := (<-c.events).(type) {
		case MatchEvent:
			got = append(got, "match "+e.Frame+" "+e.Match.State)
		case TicketEvent:
			got = append(got, "ticket "+e.Frame+" "+e.Ticket.Status)
		case HelloEvent:
			got = append(got, "hello")
		}
	}
	want := []string{"match match.ready READY", "ticket hello MATCHED", "hello"}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
}
