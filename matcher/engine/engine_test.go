package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// The worked example of seed 001 §A3: window 50 + 25 per 5 s, K = 4. The
// first pass finds three in the anchor's window; five seconds later exactly
// p:7735, p:9182, p:4471 and p:6013 are matched, p:2210 and p:8890 stay.
func TestWorkedExampleA3(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{
		Name:        "ranked",
		Seats:       matcher.Seats{Players: 4},
		SkillRules:  matcher.SkillRules{Window: &matcher.Window{Start: 50, Step: 25, Every: 5 * time.Second, Max: 400}},
		RegionRules: matcher.RegionRules{Regions: []string{"na"}},
	})
	anchor := h.join("p:9182", 1450)
	h.advance(time.Millisecond) // everyone else joined after the anchor
	ids := map[string]string{}
	for _, p := range []struct {
		user  string
		skill float64
	}{{"p:7735", 1408}, {"p:4471", 1490}, {"p:6013", 1523}, {"p:2210", 1612}, {"p:8890", 1701}} {
		ids[p.user] = h.join(p.user, p.skill).ID
	}
	h.advance(-time.Millisecond)

	if res := h.tick(); res.Matches != 0 {
		t.Fatalf("pass 1 formed %d matches, want 0 (3 in window, need 4)", res.Matches)
	}
	h.advance(5 * time.Second)
	if res := h.tick(); res.Matches != 1 {
		t.Fatalf("pass 2 formed %d matches, want 1", res.Matches)
	}
	got := h.seated(anchor.ID)
	want := []string{"p:4471", "p:6013", "p:7735", "p:9182"}
	if !slices.Equal(got, want) {
		t.Fatalf("matched %v, want %v", got, want)
	}
	m := h.match(h.ticket(anchor.ID).MatchID)
	if m.Spread != 115 || m.FormedBy != matcher.FormedFilled || m.State != matcher.MatchReady {
		t.Fatalf("match spread=%v formedBy=%s state=%s, want 115 FILLED READY", m.Spread, m.FormedBy, m.State)
	}
	for _, u := range []string{"p:2210", "p:8890"} {
		if s := h.ticket(ids[u]).Status; s != matcher.StatusWaiting {
			t.Fatalf("%s is %s, want WAITING", u, s)
		}
	}
	if d := h.depth(); d != 2 {
		t.Fatalf("pool depth %d, want 2", d)
	}
	if n := h.pushed.count(); n != 1 {
		t.Fatalf("%d events delivered, want 1 match.found", n)
	}
}

// With the strict variant (coherence 1) a candidate further than one window
// from a player already collected is skipped even though it is inside the
// anchor's window.
func TestCoherenceStrict(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{
		Name:       "q",
		Seats:      matcher.Seats{Players: 3},
		SkillRules: matcher.SkillRules{Coherence: 1, Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 10}}}},
	})
	a := h.join("anchor", 100)
	h.advance(time.Millisecond)
	h.join("low", 91) // inside the anchor's window, collected first
	h.advance(time.Millisecond)
	h.join("high", 109) // inside the anchor's window, 18 from "low": incoherent
	h.advance(time.Millisecond)
	h.join("mid", 98)
	h.tick()
	got := h.seated(a.ID)
	if want := []string{"anchor", "low", "mid"}; !slices.Equal(got, want) {
		t.Fatalf("matched %v, want %v", got, want)
	}
}

// A lone outlier at the head must not block the players behind it.
func TestOutlierAtHeadDoesNotBlock(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}})
	outlier := h.join("outlier", 5)
	var rest []matcher.Ticket
	for i := range 6 {
		h.advance(time.Millisecond)
		rest = append(rest, h.join(fmt.Sprintf("p%d", i), 90))
	}
	if res := h.tick(); res.Matches != 3 {
		t.Fatalf("formed %d matches, want 3", res.Matches)
	}
	for _, r := range rest {
		if s := h.ticket(r.ID).Status; s != matcher.StatusMatched {
			t.Fatalf("%s is %s", r.UserID, s)
		}
	}
	if s := h.ticket(outlier.ID).Status; s != matcher.StatusWaiting {
		t.Fatalf("outlier is %s, want WAITING", s)
	}
}

// Rooms of 3 fall back to 2 once the oldest has waited fallbackAfter.
func TestRoomFallback(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "chat-topic-42", Kind: matcher.KindRoom, Seats: matcher.Seats{Players: 3, MinPlayers: 2, FallbackAfter: 60 * time.Second}})
	a := h.join("a", 50)
	h.advance(time.Second)
	h.join("b", 50)
	h.tick()
	h.advance(58 * time.Second) // the oldest has waited 59 s
	if res := h.tick(); res.Matches != 0 {
		t.Fatalf("fell back after 59 s")
	}
	h.advance(time.Second)
	if res := h.tick(); res.Matches != 1 {
		t.Fatalf("no fallback after 60 s")
	}
	m := h.match(h.ticket(a.ID).MatchID)
	if m.FormedBy != matcher.FormedFallback || len(m.Players) != 2 {
		t.Fatalf("got %s with %d players, want FALLBACK with 2", m.FormedBy, len(m.Players))
	}
	// Three waiting fill a room at once.
	for _, u := range []string{"c", "d", "e"} {
		h.join(u, 50)
	}
	if res := h.tick(); res.Matches != 1 || res.Players != 3 {
		t.Fatalf("got %+v, want one room of 3", res)
	}
}

func TestDeadline(t *testing.T) {
	far := &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 1}}}
	t.Run("bots", func(t *testing.T) {
		h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 4, Bots: true}, SkillRules: matcher.SkillRules{Window: far}, Timing: matcher.Timing{Deadline: time.Minute}})
		a := h.join("a", 10)
		h.join("b", 500)
		h.advance(59 * time.Second)
		if res := h.tick(); res.Matches != 0 {
			t.Fatal("matched before the deadline")
		}
		h.advance(time.Second)
		if res := h.tick(); res.Matches != 1 {
			t.Fatalf("deadline formed %+v, want one match", res)
		}
		m := h.match(h.ticket(a.ID).MatchID)
		if m.FormedBy != matcher.FormedTimeout || len(m.Players) != 2 || m.Bots != 2 {
			t.Fatalf("got %s players=%d bots=%d, want TIMEOUT 2 players 2 bots", m.FormedBy, len(m.Players), m.Bots)
		}
	})
	t.Run("short-handed", func(t *testing.T) {
		h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 4, MinPlayers: 2}, SkillRules: matcher.SkillRules{Window: far}, Timing: matcher.Timing{Deadline: time.Minute}})
		a := h.join("a", 10)
		h.advance(time.Second)
		h.join("b", 900)
		h.join("c", 20)
		h.advance(time.Minute)
		h.tick()
		m := h.match(h.ticket(a.ID).MatchID)
		if m.FormedBy != matcher.FormedTimeout || len(m.Players) != 3 || m.Bots != 0 {
			t.Fatalf("got %s players=%d bots=%d, want TIMEOUT 3 players", m.FormedBy, len(m.Players), m.Bots)
		}
	})
	t.Run("closest first", func(t *testing.T) {
		h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{Window: far}, Timing: matcher.Timing{Deadline: time.Minute}})
		a := h.join("a", 100)
		h.advance(time.Second)
		h.join("far", 900)
		h.join("near", 130)
		h.advance(time.Minute)
		h.tick()
		if got := h.seated(a.ID); !slices.Equal(got, []string{"a", "near"}) {
			t.Fatalf("matched %v, want a with near", got)
		}
	})
	t.Run("expired", func(t *testing.T) {
		h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 4, MinPlayers: 2}, SkillRules: matcher.SkillRules{Window: far}, Timing: matcher.Timing{Deadline: time.Minute}})
		a := h.join("a", 10)
		h.advance(time.Minute)
		if res := h.tick(); res.Expired != 1 {
			t.Fatalf("got %+v, want one expired", res)
		}
		if s := h.ticket(a.ID).Status; s != matcher.StatusExpired {
			t.Fatalf("ticket is %s, want EXPIRED", s)
		}
		if d := h.depth(); d != 0 {
			t.Fatalf("pool depth %d after expiry", d)
		}
		if n := h.pushed.count(); n != 1 {
			t.Fatalf("%d events, want the ticket.update", n)
		}
	})
}

// A player cancelled in the record but still in the pool makes the commit
// fall short: nothing is matched and the others go back with their original
// enqueue times.
func TestShortfallRequeuesWithOriginalScores(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 3}})
	a := h.join("a", 50)
	h.advance(time.Second)
	b := h.join("b", 50)
	h.advance(time.Second)
	c := h.join("c", 50)
	// Cancel c in the record only, as if the cancel's pool removal were lost.
	if _, _, err := h.led.Resolve(context.Background(), c.ID, matcher.StatusCancelled, matcher.ReasonUser, h.clock()); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Second)
	if res := h.tick(); res.Matches != 0 {
		t.Fatalf("matched with a cancelled player")
	}
	part := matcher.Partition{Queue: "q", Region: "global"}.String()
	olds, err := h.pool.Oldest(context.Background(), part, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(olds) != 2 || olds[0].TicketID != a.ID || olds[1].TicketID != b.ID {
		t.Fatalf("pool after shortfall: %+v", olds)
	}
	if !olds[0].Enqueue.Equal(a.EnqueuedAt) || !olds[1].Enqueue.Equal(b.EnqueuedAt) {
		t.Fatalf("enqueue times moved: %v %v, want %v %v", olds[0].Enqueue, olds[1].Enqueue, a.EnqueuedAt, b.EnqueuedAt)
	}
	for _, id := range []string{a.ID, b.ID} {
		if s := h.ticket(id).Status; s != matcher.StatusWaiting {
			t.Fatalf("ticket %s is %s", id, s)
		}
	}
}

func TestCancelToldTheTruth(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}})
	a := h.join("a", 50)
	b := h.join("b", 50)
	h.tick()
	_, err := h.svc.Cancel(context.Background(), "a", a.ID)
	if matcher.ErrorCode(err) != matcher.CodeAlreadyMatched {
		t.Fatalf("cancel after match: %v, want ALREADY_MATCHED", err)
	}
	if e := err.(*matcher.Error); e.MatchID != h.ticket(a.ID).MatchID {
		t.Fatalf("told match %s, record says %s", e.MatchID, h.ticket(a.ID).MatchID)
	}
	if _, err := h.svc.Cancel(context.Background(), "a", b.ID); matcher.ErrorCode(err) != matcher.CodeNotFound {
		t.Fatalf("cancelling another user's ticket: %v, want NOT_FOUND", err)
	}
	c := h.join("c", 50)
	if _, err := h.svc.Join(context.Background(), matcher.JoinRequest{UserID: "c", Queue: "q"}); matcher.ErrorCode(err) != matcher.CodeAlreadyQueued {
		t.Fatalf("second join: %v, want ALREADY_QUEUED", err)
	}
	got, err := h.svc.Cancel(context.Background(), "c", c.ID)
	if err != nil || got.Status != matcher.StatusCancelled || got.CancelReason != matcher.ReasonUser {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	if _, err := h.svc.Cancel(context.Background(), "c", c.ID); matcher.ErrorCode(err) != matcher.CodeAlreadyCancelled {
		t.Fatalf("second cancel: %v, want ALREADY_CANCELLED", err)
	}
	if d := h.depth(); d != 0 {
		t.Fatalf("cancelled ticket left in pool (depth %d)", d)
	}
}

func TestJoinValidation(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, RegionRules: matcher.RegionRules{Regions: []string{"eu", "na"}}})
	cases := []struct {
		req  matcher.JoinRequest
		code matcher.Code
	}{
		{matcher.JoinRequest{UserID: "u", Queue: "nope", Region: "eu"}, matcher.CodeUnknownQueue},
		{matcher.JoinRequest{UserID: "u", Queue: "q", Region: "mars"}, matcher.CodeBadRequest},
		{matcher.JoinRequest{UserID: "u", Queue: "q"}, matcher.CodeBadRequest}, // two regions: must choose
	}
	for _, c := range cases {
		if _, err := h.svc.Join(context.Background(), c.req); matcher.ErrorCode(err) != c.code {
			t.Errorf("join %+v: %v, want %s", c.req, err, c.code)
		}
	}
	if st, err := h.svc.UserState(context.Background(), "u"); err != nil || len(st.Tickets) != 0 {
		t.Fatalf("rejected joins left state: %+v %v", st, err)
	}
}

func TestWindowCurves(t *testing.T) {
	pts := matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 5}, {After: time.Minute, Width: 15}, {After: 3 * time.Minute, Width: 30}}}
	for _, c := range []struct {
		wait time.Duration
		want float64
	}{{0, 5}, {59 * time.Second, 5}, {time.Minute, 15}, {179 * time.Second, 15}, {3 * time.Minute, 30}, {time.Hour, 30}} {
		if got := pts.Width(c.wait); got != c.want {
			t.Errorf("points width(%s) = %v, want %v", c.wait, got, c.want)
		}
	}
	f := matcher.Window{Start: 50, Step: 25, Every: 5 * time.Second, Max: 400}
	for _, c := range []struct {
		wait time.Duration
		want float64
	}{{0, 50}, {4999 * time.Millisecond, 50}, {5 * time.Second, 75}, {time.Minute, 350}, {time.Hour, 400}} {
		if got := f.Width(c.wait); got != c.want {
			t.Errorf("formula width(%s) = %v, want %v", c.wait, got, c.want)
		}
	}
}

func TestEstimatedStartsWider(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{EstimatedMinWidth: 15}})
	// No skill claim: estimated at the default 50.
	a, err := h.svc.Join(context.Background(), matcher.JoinRequest{UserID: "est", Queue: "q"})
	if err != nil || !a.Estimated || a.Skill != 50 {
		t.Fatalf("join: %+v %v", a, err)
	}
	h.advance(time.Millisecond)
	h.join("known", 62) // 12 away: outside ±5, inside ±15
	if res := h.tick(); res.Matches != 1 {
		t.Fatalf("estimated anchor did not use its wider window: %+v", res)
	}
}

// A player with no socket and no heartbeat for the heartbeat timeout is
// cancelled (reason heartbeat) and never matched; one who comes back within
// the timeout keeps the ticket and its place; a REST heartbeat counts too.
func TestGhostEviction(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{
		Name:       "q",
		Seats:      matcher.Seats{Players: 2},
		SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 1}}}},
		Timing:     matcher.Timing{HeartbeatTimeout: 30 * time.Second},
	})
	ghost := h.join("ghost", 10)
	back := h.join("back", 500)
	rest := h.join("rest", 900)
	h.seen.leave("ghost", h.clock())
	h.seen.leave("back", h.clock())
	h.seen.leave("rest", h.clock())
	h.advance(20 * time.Second)
	h.seen.back("back") // reconnected within the timeout
	if err := h.svc.Heartbeat(context.Background(), "rest", rest.ID); err != nil {
		t.Fatal(err)
	}
	h.advance(11 * time.Second) // 31 s since anyone left
	if res := h.tick(); res.Ghosts != 1 {
		t.Fatalf("pass evicted %d ghosts, want 1", res.Ghosts)
	}
	g := h.ticket(ghost.ID)
	if g.Status != matcher.StatusCancelled || g.CancelReason != matcher.ReasonHeartbeat {
		t.Fatalf("ghost ticket is %s/%s, want CANCELLED/heartbeat", g.Status, g.CancelReason)
	}
	for _, id := range []string{back.ID, rest.ID} {
		if s := h.ticket(id).Status; s != matcher.StatusWaiting {
			t.Fatalf("ticket %s is %s, want WAITING", id, s)
		}
	}
	// The one who came back keeps the place in the wait order.
	olds, _ := h.pool.Oldest(context.Background(), "q:global", 10)
	kept := false
	for _, e := range olds {
		kept = kept || (e.TicketID == back.ID && e.Enqueue.Equal(back.EnqueuedAt))
	}
	if len(olds) != 2 || !kept {
		t.Fatalf("pool after eviction: %+v", olds)
	}
	// The REST player stops heartbeating: evicted a timeout after the last one.
	h.advance(20 * time.Second)
	if res := h.tick(); res.Ghosts != 1 || h.ticket(rest.ID).CancelReason != matcher.ReasonHeartbeat {
		t.Fatalf("REST player not evicted: %+v", res)
	}
	// A ghost is never matched, even when its deadline comes first.
	late := h.join("late", 10)
	h.seen.leave("late", h.clock())
	h.advance(5 * time.Minute)
	h.join("partner", 10)
	h.tick()
	if s := h.ticket(late.ID); s.Status != matcher.StatusCancelled {
		t.Fatalf("ghost at its deadline is %s, want CANCELLED", s.Status)
	}
}

// Players of one skill (a default rating, say) are not all each anchor's
// nearest: a pass reads the ones next to each anchor, so a crowd is matched
// as fast as players of spread skills, up to a pass's seat bound (128
// pairs; a round of fewer than AnchorDepth anchors is left to the next
// pass). Reading the same few for every anchor, a pass formed 4 matches out
// of any crowd; reading each anchor's neighbours but stopping at the first
// round where an anchor found its neighbours taken, 23 to 193 out of this
// one (of 256 then possible).
func TestCrowdOfOneSkillMatchedInOnePass(t *testing.T) {
	h := newHarness(t, duelQueue())
	const crowd = 600
	for i := range crowd {
		h.join(fmt.Sprintf("c%03d", i), 1500)
		h.advance(time.Millisecond)
	}
	res := h.tick()
	t.Logf("one pass over %d players of one skill: %d matches", crowd, res.Matches)
	if res.Matches < 115 {
		t.Fatalf("one pass over %d players of one skill formed %d matches, want 115 or more", crowd, res.Matches)
	}
}
