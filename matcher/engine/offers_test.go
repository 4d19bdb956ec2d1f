package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

func regionQueue() matcher.QueueConfig {
	return matcher.QueueConfig{
		Name:        "ranked",
		Seats:       matcher.Seats{Players: 2},
		SkillRules:  matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 5}}}},
		RegionRules: matcher.RegionRules{Regions: []string{"eu", "na"}, Adjacent: map[string][]string{"eu": {"na"}, "na": {"eu"}}, OfferAfter: 30 * time.Second},
	}
}

func (h *harness) joinIn(user, region string, skill float64) matcher.Ticket {
	h.t.Helper()
	return h.joinReq(matcher.JoinRequest{UserID: user, Region: region, Skill: &skill})
}

// An offer is lost and repeated: the home keeps the player until a
// neighbour takes them; losing the offer costs a pass.
func TestOfferLostAndRepeated(t *testing.T) {
	alloc := &fakeAllocator{}
	h := newHarness(t, regionQueue(), withAllocator(alloc))
	ctx := context.Background()
	a := h.joinIn("eve", "eu", 100)
	h.advance(25 * time.Second)
	b := h.joinIn("nat", "na", 102) // nobody for eve in eu, nobody for nat in na
	h.advance(5 * time.Second)
	if res := h.tickIn("ranked:eu"); res.Offered != 1 || res.Matches != 0 {
		t.Fatalf("home pass = %+v, want eve offered", res)
	}
	// The offer is lost before the neighbour reads it.
	if err := h.pool.WithdrawOffers(ctx, "ranked:na", a.ID); err != nil {
		t.Fatal(err)
	}
	if res := h.tickIn("ranked:na"); res.Matches != 0 {
		t.Fatal("matched without an offer")
	}
	if !h.inPool("ranked:eu", a.ID) || h.ticket(a.ID).Status != matcher.StatusWaiting {
		t.Fatal("the lost offer cost the player their place")
	}
	// The next home pass repeats it, and the neighbour takes the player.
	h.advance(500 * time.Millisecond)
	if res := h.tickIn("ranked:eu"); res.Offered != 1 {
		t.Fatalf("offer not repeated: %+v", res)
	}
	if res := h.tickIn("ranked:na"); res.Matches != 1 {
		t.Fatalf("neighbour pass = %+v, want the match", res)
	}
	m := h.match(h.ticket(a.ID).MatchID)
	if m.Region != "na" || h.ticket(b.ID).MatchID != m.ID || m.Server == nil || alloc.calls[0].Region != "na" {
		t.Fatalf("match %+v (allocated in %s), want eve and nat in na", m, alloc.calls[0].Region)
	}
	if h.inPool("ranked:eu", a.ID) {
		t.Fatal("the taken player is still in the home pool")
	}
	// The home has nothing left to do with eve, nor to offer.
	if res := h.tickIn("ranked:eu"); res.Matches != 0 || res.Offered != 0 {
		t.Fatalf("home pass after = %+v", res)
	}
	if offers, _ := h.pool.Offers(ctx, "ranked:na", h.clock(), 10); len(offers) != 0 {
		t.Fatalf("used offer still there: %+v", offers)
	}
}

// Before OfferAfter nothing is offered; a group of offered players only is
// left to their home; the deadline stays with the home.
func TestOfferKeepsHomeOwnership(t *testing.T) {
	h := newHarness(t, regionQueue())
	ctx := context.Background()
	a := h.joinIn("oak", "eu", 100)
	b := h.joinIn("pip", "eu", 500)
	h.advance(29 * time.Second)
	if res := h.tickIn("ranked:eu"); res.Offered != 0 {
		t.Fatal("offered before offerAfter")
	}
	h.advance(time.Second)
	if res := h.tickIn("ranked:eu"); res.Offered != 2 {
		t.Fatalf("offered %d, want 2", res.Offered)
	}
	// quin, as close to oak as can be, is offered too (written directly, so
	// that the home does not match them first).
	c := h.joinIn("quin", "eu", 100)
	var offered []matcher.Entry
	for _, e := range h.entries("ranked:eu") {
		if e.TicketID == c.ID {
			offered = append(offered, e)
		}
	}
	if _, err := h.pool.Offer(ctx, "ranked:na", "ranked:eu", offered, h.clock(), h.clock().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if res := h.tickIn("ranked:na"); res.Matches != 0 {
		t.Fatal("the neighbour formed a match of offered players only")
	}
	if res := h.tickIn("ranked:eu"); res.Matches != 1 || h.ticket(a.ID).MatchID != h.ticket(c.ID).MatchID {
		t.Fatal("the home did not match its own players")
	}
	// pip stays offered, unmatched, until the home deadline resolves them.
	h.advance(5 * time.Minute)
	h.tickIn("ranked:na")
	if h.ticket(b.ID).Status != matcher.StatusWaiting {
		t.Fatal("the neighbour resolved a player it does not own")
	}
	h.tickIn("ranked:eu")
	if st := h.ticket(b.ID).Status; st == matcher.StatusWaiting {
		t.Fatal("the home deadline did not resolve the player")
	}
}

// A player known to two partitions (waiting at home, offered to the
// neighbour) ends in exactly one match, however the two engines interleave.
func TestOfferedPlayerInExactlyOneMatch(t *testing.T) {
	t.Run("memory+miniredis", func(t *testing.T) {
		offerRace(t, newHarness(t, regionQueue(), withAllocator(&fakeAllocator{})), 60)
	})
	t.Run("postgres+redis", func(t *testing.T) {
		rdb := redistest.Real(t)
		h := newHarnessWith(t, regionQueue(), rdb, redistest.Prefix(t), ledger.NewPostgres(pgtest.New(t)), withAllocator(&fakeAllocator{}))
		offerRace(t, h, 30)
	})
}

func offerRace(t *testing.T, h *harness, rounds int) {
	ctx := context.Background()
	won := map[string]int{}
	defer func() { t.Logf("matched at home %d times, by the neighbour %d times", won["eu"], won["na"]) }()
	for i := range rounds {
		// star waits in eu long enough to be offered; eu and na each have
		// a partner for star who is nobody else's.
		skill := float64(1000 * (i + 1))
		star := h.joinIn(fmt.Sprint("star", i), "eu", skill)
		h.advance(31 * time.Second)
		home := h.joinIn(fmt.Sprint("home", i), "eu", skill+1)
		away := h.joinIn(fmt.Sprint("away", i), "na", skill+2)
		// Write the offer without letting eu match yet: an offer-only pass
		// of a second eu engine would match too, so write it directly.
		if _, err := h.pool.Offer(ctx, "ranked:na", "ranked:eu", h.entries("ranked:eu")[:1], h.clock(), h.clock().Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, part := range []string{"ranked:eu", "ranked:na"} {
			wg.Go(func() {
				if _, err := h.pools[part].Tick(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		st := h.ticket(star.ID)
		if st.Status != matcher.StatusMatched {
			// Both claims may lose to each other's claim of the partner
			// only in theory (they claim disjoint partners): star must be
			// matched by one of them.
			t.Fatalf("round %d: star is %s", i, st.Status)
		}
		m := h.match(st.MatchID)
		won[m.Region]++
		partner := home
		other := away
		if m.Region == "na" {
			partner, other = away, home
		}
		if h.ticket(partner.ID).MatchID != m.ID || h.ticket(other.ID).Status != matcher.StatusWaiting {
			t.Fatalf("round %d: match %s in %s; partner %+v, other %+v", i, m.ID, m.Region, h.ticket(partner.ID), h.ticket(other.ID))
		}
		if h.inPool("ranked:eu", star.ID) || !h.inPool("ranked:"+map[string]string{"eu": "na", "na": "eu"}[m.Region], other.ID) {
			t.Fatalf("round %d: pools disagree with the record", i)
		}
		// Clean up: the one left waiting leaves.
		if _, err := h.svc.Cancel(ctx, other.UserID, other.ID); err != nil {
			t.Fatal(err)
		}
		_ = h.pool.WithdrawOffers(ctx, "ranked:na", star.ID)
	}
}

// Two regions offering to each other at once, each reaching for the other's
// player in the same instant: the claims meet on the first pool (name
// order), so one of them forms the match every time instead of both putting
// their half back.
func TestMutualOffersDoNotLivelock(t *testing.T) {
	h := newHarness(t, regionQueue())
	ctx := context.Background()
	for i := range 40 {
		skill := float64(1000 * (i + 1))
		a := h.joinIn(fmt.Sprint("eu", i), "eu", skill)
		b := h.joinIn(fmt.Sprint("na", i), "na", skill+1)
		// Nobody else is close, so each stays home unmatched; both are
		// offered (written directly, to keep the two passes concurrent).
		h.advance(31 * time.Second)
		for _, o := range []struct{ from, to string }{{"ranked:eu", "ranked:na"}, {"ranked:na", "ranked:eu"}} {
			if _, err := h.pool.Offer(ctx, o.to, o.from, h.entries(o.from), h.clock(), h.clock().Add(10*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for _, part := range []string{"ranked:eu", "ranked:na"} {
			wg.Go(func() {
				if _, err := h.pools[part].Tick(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		ta, tb := h.ticket(a.ID), h.ticket(b.ID)
		if ta.Status != matcher.StatusMatched || ta.MatchID != tb.MatchID {
			t.Fatalf("round %d: %s/%s and %s/%s; want one match of both", i, ta.Status, ta.MatchID, tb.Status, tb.MatchID)
		}
		_ = h.pool.WithdrawOffers(ctx, "ranked:na", a.ID)
		_ = h.pool.WithdrawOffers(ctx, "ranked:eu", b.ID)
	}
}
