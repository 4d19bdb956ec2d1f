package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
)

// A user with hundreds of resolved tickets in the history window gets a
// bounded catch-up (the waiting ticket and the newest resolved ones) that
// says more exist, and TicketHistory pages through all the rest exactly once.
func TestUserStateIsBounded(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, RegionRules: matcher.RegionRules{Regions: []string{"eu"}}})
	ctx := context.Background()
	const resolved = 300
	for range resolved {
		tk := h.join("u", 50)
		h.advance(100 * time.Millisecond)
		if _, err := h.svc.Cancel(ctx, "u", tk.ID); err != nil {
			t.Fatal(err)
		}
	}
	waiting := h.join("u", 50)

	st, err := h.svc.UserState(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tickets) != engine.DefaultCatchUp+1 || !st.More || st.Next == "" {
		t.Fatalf("catch-up of %d tickets, more %v, next %q; want %d and more", len(st.Tickets), st.More, st.Next, engine.DefaultCatchUp+1)
	}
	if last := st.Tickets[len(st.Tickets)-1]; last.ID != waiting.ID {
		t.Fatalf("the waiting ticket is not in the catch-up: last is %+v", last)
	}
	b, _ := json.Marshal(st)
	if len(b) > 16<<10 {
		t.Fatalf("catch-up of %d bytes", len(b))
	}

	seen := map[string]bool{waiting.ID: true}
	for _, tk := range st.Tickets {
		seen[tk.ID] = true
	}
	next := st.Next
	for pages := 0; next != ""; pages++ {
		if pages > resolved {
			t.Fatal("paging does not end")
		}
		p, err := h.svc.TicketHistory(ctx, "u", next, 64)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Tickets) > 64 || (p.More && p.Next == "") {
			t.Fatalf("page of %d tickets, more %v next %q", len(p.Tickets), p.More, p.Next)
		}
		var prev time.Time
		for i, tk := range p.Tickets {
			if seen[tk.ID] || tk.Status != matcher.StatusCancelled || (i > 0 && tk.UpdatedAt.After(prev)) {
				t.Fatalf("page ticket %+v: repeated, not resolved or out of order", tk)
			}
			seen[tk.ID], prev = true, tk.UpdatedAt
		}
		next = p.Next
	}
	if len(seen) != resolved+1 {
		t.Fatalf("catch-up and pages hold %d tickets, want %d", len(seen), resolved+1)
	}

	for _, c := range []struct {
		before string
		limit  int
	}{{"not-a-cursor", 10}, {"", engine.MaxHistoryPage + 1}, {"", -1}} {
		if _, err := h.svc.TicketHistory(ctx, "u", c.before, c.limit); matcher.ErrorCode(err) != matcher.CodeBadRequest {
			t.Errorf("TicketHistory(%q, %d): %v, want BAD_REQUEST", c.before, c.limit, err)
		}
	}
	if p, err := h.svc.TicketHistory(ctx, "u", "", 0); err != nil || len(p.Tickets) != engine.DefaultHistoryPage || !p.More {
		t.Fatalf("first page: %d tickets, more %v, %v", len(p.Tickets), p.More, err)
	}
}
