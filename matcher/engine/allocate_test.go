package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/protocol"
)

func duelQueue() matcher.QueueConfig {
	return matcher.QueueConfig{
		Name:        "duel",
		Seats:       matcher.Seats{Players: 2},
		SkillRules:  matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}},
		RegionRules: matcher.RegionRules{Regions: []string{"eu"}},
	}
}

// The allocator fails twice and then answers: the match forms on the third
// attempt in the same pass, after backing off 50 ms and 100 ms, in the
// region of the partition, and the committed match carries the server.
func TestAllocationFailsTwiceThenSucceeds(t *testing.T) {
	alloc := &fakeAllocator{failFirst: 2}
	var waits []time.Duration
	h := newHarness(t, duelQueue(), withAllocator(alloc), withSleeps(&waits))
	a := h.join("ada", 100)
	h.advance(time.Millisecond)
	h.join("bob", 110)
	res := h.tick()
	if res.Matches != 1 || res.AllocationFailures != 0 {
		t.Fatalf("pass = %+v, want one match", res)
	}
	if !slices.Equal(waits, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}) {
		t.Fatalf("backoff waits %v, want 50ms then 100ms", waits)
	}
	m := h.match(h.ticket(a.ID).MatchID)
	if m.Server == nil || m.Server.Address != "10.0.eu.3:7777" || m.Server.Session != "s-"+m.ID {
		t.Fatalf("server %+v, want the third answer", m.Server)
	}
	for _, c := range alloc.calls {
		if c.Region != "eu" || c.MatchID != m.ID || c.Queue != "duel" || len(c.Players) != 2 {
			t.Fatalf("allocation request %+v", c)
		}
	}
	found := h.framesOfType(protocol.FrameMatchFound)
	if len(found) != 1 || found[0].Match.Server == nil || found[0].Match.Server.Address != m.Server.Address {
		t.Fatalf("match.found of a READY match must carry the server: %+v", found)
	}
	if len(alloc.releasedIDs()) != 0 {
		t.Fatal("released a server in use")
	}
}

// The allocator never answers: nothing is committed, everyone is back in
// the pool with their original scores (never placed in another region),
// explain says what is missing, and once servers come back the match forms.
func TestAllocationNeverSucceeds(t *testing.T) {
	alloc := &fakeAllocator{failAll: true}
	var waits []time.Duration
	h := newHarness(t, duelQueue(), withAllocator(alloc), withSleeps(&waits))
	a := h.join("cid", 100)
	h.advance(time.Second)
	b := h.join("dee", 105)
	before := h.entries("duel:eu")
	res := h.tick()
	if res.Matches != 0 || res.AllocationFailures != 1 || alloc.callCount() != 3 {
		t.Fatalf("pass = %+v after %d allocation calls; want one failure after 3", res, alloc.callCount())
	}
	after := h.entries("duel:eu")
	if len(after) != 2 || after[0] != before[0] || after[1] != before[1] {
		t.Fatalf("pool after the failure %+v, want exactly %+v", after, before)
	}
	for _, tk := range []matcher.Ticket{a, b} {
		if got := h.ticket(tk.ID); got.Status != matcher.StatusWaiting || got.Version != 1 {
			t.Fatalf("ticket %+v", got)
		}
	}
	for _, c := range alloc.calls {
		if c.Region != "eu" {
			t.Fatalf("asked for a server in %s", c.Region)
		}
	}
	v, err := h.svc.Ticket(context.Background(), "cid", a.ID)
	if err != nil || v.Explain == nil || v.Explain.Missing != matcher.MissingAllocation {
		t.Fatalf("explain = %+v, %v; want allocation missing", v.Explain, err)
	}
	// Every pass tries again; once a server is there, the match forms.
	alloc.setFailAll(false)
	h.advance(time.Second)
	if res := h.tick(); res.Matches != 1 {
		t.Fatalf("pass after recovery = %+v", res)
	}
	if m := h.match(h.ticket(a.ID).MatchID); m.Server == nil || m.Region != "eu" {
		t.Fatalf("match %+v", m)
	}
}

// A commit that fails after the allocation (a player cancelled between the
// claim and the commit) gives the server back.
func TestAllocationReleasedOnFailedCommit(t *testing.T) {
	alloc := &fakeAllocator{}
	mem := ledger.NewMemory()
	st := &staller{Ledger: mem}
	h := newHarnessWith(t, duelQueue(), redistest.Mini(t), "mg", st, withAllocator(alloc))
	a := h.join("eda", 100)
	b := h.join("fin", 100)
	st.before = func() {
		st.before = nil
		if _, _, err := mem.Resolve(context.Background(), b.ID, matcher.StatusCancelled, matcher.ReasonUser, h.clock()); err != nil {
			t.Error(err)
		}
	}
	if res := h.tick(); res.Matches != 0 {
		t.Fatalf("pass = %+v", res)
	}
	if alloc.callCount() != 1 || len(alloc.releasedIDs()) != 1 || alloc.releasedIDs()[0] != alloc.calls[0].MatchID {
		t.Fatalf("allocated %d, released %v", alloc.callCount(), alloc.releasedIDs())
	}
	if !h.inPool("duel:eu", a.ID) || h.inPool("duel:eu", b.ID) {
		t.Fatal("the still-waiting player is not back, or the cancelled one is")
	}
}
