package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/lease"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
	"github.com/matchgate/matchgate/protocol"
)

func acceptQueue(players int) matcher.QueueConfig {
	return matcher.QueueConfig{
		Name:        "arena",
		Seats:       matcher.Seats{Players: players},
		SkillRules:  matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}},
		AcceptRules: matcher.AcceptRules{AcceptWindow: 10 * time.Second},
	}
}

// formPending joins users (skill 100 each, a millisecond apart) and forms
// one PENDING_ACCEPT match of all of them.
func formPending(t *testing.T, h *harness, users ...string) (matcher.Match, map[string]matcher.Ticket) {
	t.Helper()
	tickets := map[string]matcher.Ticket{}
	for _, u := range users {
		tickets[u] = h.join(u, 100)
		h.advance(time.Millisecond)
	}
	if res := h.tick(); res.Matches != 1 {
		t.Fatalf("formed %d matches, want 1", res.Matches)
	}
	m := h.match(h.ticket(tickets[users[0]].ID).MatchID)
	if m.State != matcher.MatchPendingAccept || m.AcceptBy == nil || !m.AcceptBy.Equal(m.CreatedAt.Add(10*time.Second)) {
		t.Fatalf("match %+v, want PENDING_ACCEPT for 10s", m)
	}
	return m, tickets
}

// Everyone accepts: the match is READY and every player is pushed
// match.ready with the server, which match.found did not show.
func TestAcceptAll(t *testing.T) {
	alloc := &fakeAllocator{}
	h := newHarness(t, acceptQueue(2), withAllocator(alloc))
	m, _ := formPending(t, h, "ann", "ben")
	if m.Server == nil || m.Server.Session != "s-"+m.ID {
		t.Fatalf("the record has no server: %+v", m.Server)
	}
	found := h.framesOfType(protocol.FrameMatchFound)
	if len(found) != 1 || found[0].Match.Server != nil || found[0].Match.AcceptBy == nil || strings.Contains(found[0].Raw, "7777") {
		t.Fatalf("match.found %s: want acceptBy and no server", found[0].Raw)
	}
	ctx := context.Background()
	got, err := h.svc.Accept(ctx, "ann", m.ID)
	if err != nil || got.State != matcher.MatchPendingAccept || !slices.Equal(got.Accepted, []string{"ann"}) {
		t.Fatalf("first accept = %+v, %v", got, err)
	}
	if len(h.framesOfType(protocol.FrameMatchReady)) != 0 {
		t.Fatal("match.ready before everyone accepted")
	}
	h.advance(2 * time.Second)
	got, err = h.svc.Accept(ctx, "ben", m.ID)
	if err != nil || got.State != matcher.MatchReady {
		t.Fatalf("last accept = %+v, %v", got, err)
	}
	ready := h.framesOfType(protocol.FrameMatchReady)
	if len(ready) != 1 || !slices.Equal(ready[0].Users, []string{"ann", "ben"}) || ready[0].Match.Server == nil ||
		ready[0].Match.Server.Address != m.Server.Address {
		t.Fatalf("match.ready = %+v", ready)
	}
	// Accepting again, or a READY match, is a harmless no-op.
	if again, err := h.svc.Accept(ctx, "ann", m.ID); err != nil || again.State != matcher.MatchReady || again.Version != got.Version {
		t.Fatalf("accepting a READY match = %+v, %v", again, err)
	}
	mustCode(t, "decline of a READY match", func() error { _, err := h.svc.Decline(ctx, "ann", m.ID); return err }(), matcher.CodeBadRequest)
	mustCode(t, "accept by a stranger", func() error { _, err := h.svc.Accept(ctx, "eve", m.ID); return err }(), matcher.CodeNotFound)
	// The window passing changes nothing now.
	h.advance(time.Minute)
	if res := h.tick(); res.Dissolved != 0 {
		t.Fatalf("dissolved a READY match")
	}
	if st := h.match(m.ID).State; st != matcher.MatchReady {
		t.Fatalf("match is %s", st)
	}
	if len(alloc.releasedIDs()) != 0 {
		t.Fatal("the server of a READY match was released")
	}
}

// One declines: the match dissolves at once, the decliner ends CANCELLED
// (declined) with a join cooldown, and everyone else, accepted or not yet
// answered, goes back to waiting with their original place and deadline.
func TestOneDeclines(t *testing.T) {
	alloc := &fakeAllocator{}
	h := newHarness(t, acceptQueue(3), withAllocator(alloc))
	m, tickets := formPending(t, h, "cat", "dan", "eli")
	ctx := context.Background()
	before := h.entries("arena:global") // empty: all claimed
	if len(before) != 0 {
		t.Fatalf("pool holds %d while the match is pending", len(before))
	}
	if _, err := h.svc.Accept(ctx, "cat", m.ID); err != nil {
		t.Fatal(err)
	}
	h.advance(3 * time.Second)
	got, err := h.svc.Decline(ctx, "dan", m.ID)
	if err != nil || got.State != matcher.MatchDissolved {
		t.Fatalf("decline = %+v, %v", got, err)
	}
	if r := alloc.releasedIDs(); !slices.Equal(r, []string{m.ID}) {
		t.Fatalf("released %v, want the match's server", r)
	}
	for _, u := range []string{"cat", "eli"} {
		orig := tickets[u]
		now := h.ticket(orig.ID)
		if now.Status != matcher.StatusWaiting || now.MatchID != "" || !now.EnqueuedAt.Equal(orig.EnqueuedAt) ||
			!now.Deadline.Equal(orig.Deadline) || now.Version != 3 {
			t.Fatalf("%s after the decline: %+v", u, now)
		}
	}
	d := h.ticket(tickets["dan"].ID)
	if d.Status != matcher.StatusCancelled || d.CancelReason != matcher.ReasonDeclined {
		t.Fatalf("decliner %+v", d)
	}
	// Back in the pool with their original scores, in their original order.
	es := h.entries("arena:global")
	if len(es) != 2 || es[0].TicketID != tickets["cat"].ID || !es[0].Enqueue.Equal(tickets["cat"].EnqueuedAt) ||
		es[1].TicketID != tickets["eli"].ID || !es[1].Deadline.Equal(tickets["eli"].Deadline) {
		t.Fatalf("pool after the decline: %+v", es)
	}
	dis := h.framesOfType(protocol.FrameMatchDissolved)
	if len(dis) != 1 || dis[0].Reason != matcher.ReasonDeclined || len(dis[0].Users) != 3 {
		t.Fatalf("match.dissolved = %+v", dis)
	}
	if ups := h.framesOfType(protocol.FrameTicketUpdate); len(ups) != 3 {
		t.Fatalf("%d ticket.update pushes, want 3", len(ups))
	}
	// The decliner is cooled down; the others are not.
	_, err = h.svc.Join(ctx, matcher.JoinRequest{UserID: "dan", Queue: "arena"})
	if de := mustCode(t, "rejoin of the decliner", err, matcher.CodeCooldown); de.RetryAfter() <= 25*time.Second || de.RetryAfter() > 30*time.Second {
		t.Fatalf("cooldown retry after %v, want about 30s", de.RetryAfter())
	}
	// Declining again, or accepting the dissolved match, is refused.
	mustCode(t, "second decline", func() error { _, err := h.svc.Decline(ctx, "eli", m.ID); return err }(), matcher.CodeAlreadyCancelled)
	mustCode(t, "accept after dissolve", func() error { _, err := h.svc.Accept(ctx, "eli", m.ID); return err }(), matcher.CodeAlreadyCancelled)
	// With a newcomer the two who kept their place match again at once.
	h.join("fay", 100)
	if res := h.tick(); res.Matches != 1 {
		t.Fatalf("no new match")
	}
	again := h.match(h.ticket(tickets["cat"].ID).MatchID)
	if !slices.Equal(sortedUsers(again), []string{"cat", "eli", "fay"}) {
		t.Fatalf("rematched %v", sortedUsers(again))
	}
}

// One stays silent: when the window passes the engine dissolves the match;
// those who accepted go back with their place, the silent one ends
// CANCELLED (accept_timeout) with a cooldown.
func TestOneSilent(t *testing.T) {
	alloc := &fakeAllocator{}
	h := newHarness(t, acceptQueue(3), withAllocator(alloc))
	m, tickets := formPending(t, h, "gus", "hil", "ian")
	ctx := context.Background()
	for _, u := range []string{"gus", "hil"} {
		if _, err := h.svc.Accept(ctx, u, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	late := h.join("jon", 100) // waits meanwhile
	h.advance(m.AcceptBy.Sub(h.clock()) - time.Millisecond)
	if res := h.tick(); res.Dissolved != 0 {
		t.Fatal("dissolved before the window passed")
	}
	h.advance(time.Millisecond) // now exactly at acceptBy
	if _, err := h.svc.Accept(ctx, "ian", m.ID); codeOf(err) != matcher.CodeAlreadyCancelled {
		t.Fatalf("accept at acceptBy = %v, want ALREADY_CANCELLED", err)
	}
	res := h.tick()
	if res.Dissolved != 1 {
		t.Fatalf("dissolved %d, want 1", res.Dissolved)
	}
	if st := h.match(m.ID).State; st != matcher.MatchDissolved {
		t.Fatalf("match is %s", st)
	}
	silent := h.ticket(tickets["ian"].ID)
	if silent.Status != matcher.StatusCancelled || silent.CancelReason != matcher.ReasonAcceptTimeout {
		t.Fatalf("silent player %+v", silent)
	}
	if _, err := h.svc.Join(ctx, matcher.JoinRequest{UserID: "ian", Queue: "arena"}); codeOf(err) != matcher.CodeCooldown {
		t.Fatalf("rejoin of the silent player = %v, want COOLDOWN", err)
	}
	// gus and hil, back with their places, were matched in the same pass
	// with jon, who waited.
	if res.Matches != 1 {
		t.Fatalf("formed %d matches in the pass, want 1", res.Matches)
	}
	again := h.match(h.ticket(tickets["gus"].ID).MatchID)
	if again.ID == m.ID || !slices.Equal(sortedUsers(again), []string{"gus", "hil", "jon"}) || h.ticket(late.ID).MatchID != again.ID {
		t.Fatalf("rematch %+v", again)
	}
	if r := alloc.releasedIDs(); !slices.Equal(r, []string{m.ID}) {
		t.Fatalf("released %v", r)
	}
	dis := h.framesOfType(protocol.FrameMatchDissolved)
	if len(dis) != 1 || dis[0].Reason != matcher.ReasonAcceptTimeout {
		t.Fatalf("match.dissolved = %+v", dis)
	}
}

// The pending index lives in Redis and is rebuilt from the record: after a
// wipe, the reconciler restores it and the window still closes.
func TestPendingIndexRebuilt(t *testing.T) {
	h := newHarness(t, acceptQueue(2))
	m, tickets := formPending(t, h, "kay", "lea")
	ctx := context.Background()
	if err := h.pool.RemovePending(ctx, "arena:global", m.ID); err != nil { // the loss
		t.Fatal(err)
	}
	h.advance(11 * time.Second)
	if res := h.tick(); res.Dissolved != 0 {
		t.Fatal("dissolved without an index entry")
	}
	part := matcher.Partition{Queue: "arena", Region: "global"}
	res, err := lease.ReconcileQueue(ctx, h.led, h.pool, &h.q, part, h.clock())
	if err != nil || res.Pending != 1 {
		t.Fatalf("reconcile = %+v, %v; want the pending match re-indexed", res, err)
	}
	if res := h.tick(); res.Dissolved != 1 {
		t.Fatalf("dissolved %d after the rebuild, want 1", res.Dissolved)
	}
	for _, u := range []string{"kay", "lea"} {
		if tk := h.ticket(tickets[u].ID); tk.Status != matcher.StatusCancelled || tk.CancelReason != matcher.ReasonAcceptTimeout {
			t.Fatalf("%s: %+v", u, tk)
		}
	}
	// A stale index entry is dropped by the next reconcile.
	if err := h.pool.AddPending(ctx, "arena:global", pool.Pending{MatchID: m.ID, AcceptBy: h.clock()}); err != nil {
		t.Fatal(err)
	}
	if res, err := lease.ReconcileQueue(ctx, h.led, h.pool, &h.q, part, h.clock()); err != nil || res.Pending != 1 {
		t.Fatalf("reconcile of a stale entry = %+v, %v", res, err)
	}
}

// A decline's cooldown ends by the matcher's clock, not by Redis's: once
// the clock the service runs on has passed it, the decliner joins again.
func TestCooldownEndsByTheClock(t *testing.T) {
	h := newHarness(t, acceptQueue(2))
	m, _ := formPending(t, h, "kim", "lee")
	ctx := context.Background()
	if _, err := h.svc.Decline(ctx, "kim", m.ID); err != nil {
		t.Fatal(err)
	}
	cd := h.q.DeclineCooldown
	h.advance(cd - time.Second)
	_, err := h.svc.Join(ctx, matcher.JoinRequest{UserID: "kim", Queue: "arena"})
	if de := mustCode(t, "rejoin within the cooldown", err, matcher.CodeCooldown); de.RetryAfter() != time.Second {
		t.Fatalf("retry after %v, want the 1s left on the clock", de.RetryAfter())
	}
	h.advance(time.Second)
	if _, err := h.svc.Join(ctx, matcher.JoinRequest{UserID: "kim", Queue: "arena"}); err != nil {
		t.Fatalf("rejoin once the clock passed the cooldown: %v", err)
	}
}

// Only a queue with an accept step and a cooldown refuses a join for one: a
// cooldown left over from an earlier configuration of the queue is not read.
func TestCooldownOnlyWithAcceptStep(t *testing.T) {
	ctx := context.Background()
	noCooldown := acceptQueue(2)
	noCooldown.DeclineCooldown = -1
	for _, c := range []struct {
		name    string
		q       matcher.QueueConfig
		refused bool
	}{
		{"no accept step", matcher.QueueConfig{Name: "arena", Seats: matcher.Seats{Players: 2}}, false},
		{"accept step, cooldown off", noCooldown, false},
		{"accept step and cooldown", acceptQueue(2), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.q)
			if err := h.pool.SetCooldown(ctx, "arena", "zoe", h.clock(), 30*time.Second); err != nil {
				t.Fatal(err)
			}
			_, err := h.svc.Join(ctx, matcher.JoinRequest{UserID: "zoe", Queue: "arena"})
			if got := codeOf(err) == matcher.CodeCooldown; got != c.refused {
				t.Fatalf("join with a cooldown set = %v; refused %v, want %v", err, got, c.refused)
			}
		})
	}
}

// Many windows closing at once are closed in one pass, on the memory record
// and on PostgreSQL: every match formed in a pass was indexed, every silent
// player ends CANCELLED (accept_timeout), every accepter goes back (and
// some are matched again in the same pass), and each match is told
// dissolved.
func TestManyWindowsCloseInOnePass(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(t *testing.T, q matcher.QueueConfig) *harness
	}{
		{"memory", func(t *testing.T, q matcher.QueueConfig) *harness { return newHarness(t, q) }},
		{"postgres", func(t *testing.T, q matcher.QueueConfig) *harness {
			pgtest.Require(t)
			return newHarnessWith(t, q, redistest.Real(t), redistest.Prefix(t), ledger.NewPostgres(pgtest.New(t)))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.new(t, acceptQueue(2))
			ctx := context.Background()
			const pairs = 30
			tickets := map[string]matcher.Ticket{}
			for i := range 2 * pairs {
				u := fmt.Sprintf("p%02d", i)
				tickets[u] = h.join(u, 100)
				h.advance(time.Millisecond)
			}
			var ms []matcher.Match
			for len(ms) < pairs {
				if res := h.tick(); res.Matches == 0 {
					t.Fatalf("formed %d of %d matches", len(ms), pairs)
				}
				ms = ms[:0]
				seen := map[string]bool{}
				for _, tk := range tickets {
					if id := h.ticket(tk.ID).MatchID; id != "" && !seen[id] {
						seen[id] = true
						ms = append(ms, h.match(id))
					}
				}
			}
			due, err := h.pool.PendingDue(ctx, "arena:global", ms[0].AcceptBy.Add(time.Minute), 0)
			if err != nil || len(due) != pairs {
				t.Fatalf("pending index holds %d matches (%v), want %d", len(due), err, pairs)
			}
			// In every other match the first player accepts.
			accepters := map[string]bool{}
			for i, m := range ms {
				if i%2 == 0 {
					u := m.Players[0].UserID
					if _, err := h.svc.Accept(ctx, u, m.ID); err != nil {
						t.Fatal(err)
					}
					accepters[u] = true
				}
			}
			last := ms[0].AcceptBy
			for _, m := range ms {
				if m.AcceptBy.After(*last) {
					last = m.AcceptBy
				}
			}
			h.advance(last.Sub(h.clock()))
			res := h.tick()
			if res.Dissolved != pairs {
				t.Fatalf("dissolved %d in the pass, want %d", res.Dissolved, pairs)
			}
			if res.Matches == 0 {
				t.Fatal("no accepter matched again in the pass")
			}
			old := map[string]string{}
			for _, m := range ms {
				for _, u := range m.UserIDs() {
					old[u] = m.ID
				}
			}
			for u, tk := range tickets {
				got := h.ticket(tk.ID)
				switch {
				case accepters[u]:
					if again := got.Status == matcher.StatusMatched && got.MatchID != old[u]; !again && got.Status != matcher.StatusWaiting {
						t.Fatalf("accepter %s: %+v, want waiting or matched again", u, got)
					}
				case got.Status != matcher.StatusCancelled || got.CancelReason != matcher.ReasonAcceptTimeout:
					t.Fatalf("silent %s: %+v", u, got)
				}
			}
			dissolved := map[string]int{}
			for _, f := range h.framesOfType(protocol.FrameMatchDissolved) {
				dissolved[f.Match.ID]++
			}
			for _, m := range ms {
				if h.match(m.ID).State != matcher.MatchDissolved || dissolved[m.ID] == 0 {
					t.Fatalf("match %s: %s, %d match.dissolved frames", m.ID, h.match(m.ID).State, dissolved[m.ID])
				}
			}
			if due, err := h.pool.PendingDue(ctx, "arena:global", time.Time{}, 0); err != nil || len(due) != res.Matches {
				t.Fatalf("pending index after the pass: %v, %v; want only the %d new matches", due, err, res.Matches)
			}
		})
	}
}
