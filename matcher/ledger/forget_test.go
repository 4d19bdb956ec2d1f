package ledger_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// TestMemoryForget: Forget drops what became final before its time, with
// its history and its events, and keeps what waits, what waits for
// accepts and what became final later.
func TestMemoryForget(t *testing.T) {
	ctx := context.Background()
	clk := t0
	l := ledger.NewMemoryAt(func() time.Time { return clk })
	tk := func(user string) matcher.Ticket { return mustCreate(t, l, ticketFor(user, "ranked", "eu", t0)) }
	a, b, c, d, e, f, g, h := tk("ann"), tk("bob"), tk("cy"), tk("dee"), tk("eve"), tk("fay"), tk("gus"), tk("hal")
	mustResolve(t, l, a.ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(time.Second))
	ready := matchOf(t0.Add(2*time.Second), b, c)
	if _, err := commitMatch(ctx, l, ready, 0); err != nil {
		t.Fatal(err)
	}
	de := pendingMatch(t, l, d, e)
	gh := pendingMatch(t, l, g, h)
	if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: gh.ID, Decliner: "hal", At: t0.Add(4 * time.Second)}); err != nil {
		t.Fatal(err)
	}

	if nt, nm := l.Forget(t0.Add(1500 * time.Millisecond)); nt != 1 || nm != 0 {
		t.Fatalf("forget before t0+1.5s: %d tickets, %d matches; want ann's ticket alone", nt, nm)
	}
	if nt, nm := l.Forget(t0.Add(10 * time.Second)); nt != 3 || nm != 2 {
		t.Fatalf("forget before t0+10s: %d tickets, %d matches; want bob's, cy's, hal's and the ready and dissolved matches", nt, nm)
	}
	for _, id := range []string{a.ID, b.ID, c.ID, h.ID} {
		if _, err := l.Ticket(ctx, id); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("forgotten ticket %s: %v", id, err)
		}
	}
	for _, id := range []string{ready.ID, gh.ID} {
		if _, err := l.Match(ctx, id); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("forgotten match %s: %v", id, err)
		}
	}
	for _, id := range []string{d.ID, e.ID, f.ID, g.ID} {
		if _, err := l.Ticket(ctx, id); err != nil {
			t.Fatalf("kept ticket %s: %v", id, err)
		}
	}
	if page, err := l.UserState(ctx, "ann", time.Time{}, 10); err != nil || len(page.Tickets) != 0 {
		t.Fatalf("ann's history after forgetting: %+v, %v", page, err)
	}
	if page, err := l.UserState(ctx, "dee", time.Time{}, 10); err != nil || len(page.Tickets) != 1 || len(page.Matches) != 1 || page.Matches[0].ID != de.ID {
		t.Fatalf("dee's state, seated in a match waiting for accepts: %+v, %v", page, err)
	}
	if w, err := l.Waiting(ctx, matcher.Partition{Queue: "ranked", Region: "eu"}); err != nil || len(w) != 2 {
		t.Fatalf("waiting after forgetting: %v, %v; want fay's and gus's", w, err)
	}
	// The outbox keeps only the events of what is kept.
	clk = t0.Add(time.Hour)
	var left []matcher.Event
	if _, err := l.DrainOutbox(ctx, 0, 100, func(es []matcher.Event) error { left = es; return nil }); err != nil {
		t.Fatal(err)
	}
	kept := []string{d.ID, e.ID, f.ID, g.ID, de.ID}
	for _, ev := range left {
		if id := ev.Match.ID; ev.Kind == matcher.EventTicketUpdated {
			id = ev.Ticket.ID
			if !slices.Contains(kept, id) {
				t.Fatalf("event %d of forgotten ticket %s left in the outbox", ev.ID, id)
			}
		} else if !slices.Contains(kept, id) {
			t.Fatalf("event %d of forgotten match %s left in the outbox", ev.ID, id)
		}
	}
	if len(left) == 0 {
		t.Fatal("no event left: the kept match's was dropped too")
	}

	// Accepted by all, the pending match and its tickets become final then.
	at := t0.Add(5 * time.Second)
	for _, u := range []string{"dee", "eve"} {
		if _, _, err := l.Accept(ctx, de.ID, u, at); err != nil {
			t.Fatal(err)
		}
	}
	if nt, nm := l.Forget(at); nt != 0 || nm != 0 {
		t.Fatalf("forget before the accept: %d tickets, %d matches; want none", nt, nm)
	}
	if nt, nm := l.Forget(at.Add(time.Millisecond)); nt != 2 || nm != 1 {
		t.Fatalf("forget after the accept: %d tickets, %d matches; want dee's, eve's and their match", nt, nm)
	}
	if _, err := l.Ticket(ctx, g.ID); err != nil {
		t.Fatalf("gus, requeued and waiting, is kept: %v", err)
	}
}
