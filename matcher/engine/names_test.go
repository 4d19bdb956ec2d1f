package engine_test

import (
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// A player's name goes from the join, through the pool's hash and the
// claim, to their seat: in a pass's own claims, in an offered player's
// claim from its home pool, and after an allocation failure put the
// claimed players back.
func TestNamesReachTheSeats(t *testing.T) {
	alloc := &fakeAllocator{}
	h := newHarness(t, regionQueue(), withAllocator(alloc))
	skill := func(v float64) *float64 { return &v }
	named := map[string]string{"ada": "Ada ✨", "bob": "", "eve": "Eve | Online", "nat": "Nat"}
	check := func(m matcher.Match) {
		t.Helper()
		for _, p := range m.Players {
			if p.Name != named[p.UserID] {
				t.Fatalf("match %s seats %s as %q, want %q: %+v", m.ID, p.UserID, p.Name, named[p.UserID], m.Players)
			}
		}
		found := false
		for _, f := range h.framesOfType("match.found") {
			if f.Match != nil && f.Match.ID == m.ID {
				found = true
				for _, p := range f.Match.Players {
					if p.Name != named[p.UserID] {
						t.Fatalf("match.found seats %s as %q", p.UserID, p.Name)
					}
				}
			}
		}
		if !found {
			t.Fatalf("no match.found for %s", m.ID)
		}
	}

	// Home pass: the first allocation fails and puts both back, the next
	// pass matches them.
	alloc.setFailAll(true)
	a := h.joinReq(matcher.JoinRequest{UserID: "ada", Name: "  Ada\u200d ✨ ", Region: "eu", Skill: skill(100)})
	if a.Name != "Ada ✨" {
		t.Fatalf("joined as %q, want the cleaned name", a.Name)
	}
	h.joinReq(matcher.JoinRequest{UserID: "bob", Region: "eu", Skill: skill(101)})
	if res := h.tickIn("ranked:eu"); res.Matches != 0 {
		t.Fatalf("matched with no server: %+v", res)
	}
	alloc.setFailAll(false)
	h.advance(2 * time.Second)
	if res := h.tickIn("ranked:eu"); res.Matches != 1 {
		t.Fatalf("home pass = %+v, want one match", res)
	}
	check(h.match(h.ticket(a.ID).MatchID))

	// An offered player is claimed from its home pool by the neighbour.
	e := h.joinReq(matcher.JoinRequest{UserID: "eve", Name: "Eve | Online", Region: "eu", Skill: skill(100)})
	h.advance(25 * time.Second)
	n := h.joinReq(matcher.JoinRequest{UserID: "nat", Name: "Nat", Region: "na", Skill: skill(102)})
	h.advance(5 * time.Second)
	if res := h.tickIn("ranked:eu"); res.Offered != 1 {
		t.Fatalf("home pass = %+v, want eve offered", res)
	}
	if res := h.tickIn("ranked:na"); res.Matches != 1 {
		t.Fatalf("neighbour pass = %+v, want the match", res)
	}
	m := h.match(h.ticket(e.ID).MatchID)
	if h.ticket(n.ID).MatchID != m.ID {
		t.Fatalf("nat is not in eve's match %s", m.ID)
	}
	check(m)
}
