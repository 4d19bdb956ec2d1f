package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// pendingMatch commits a PENDING_ACCEPT match of the tickets with an accept
// window of 10 s from t0+1s and returns it as stored.
func pendingMatch(t *testing.T, l matcher.Ledger, tickets ...matcher.Ticket) matcher.Match {
	t.Helper()
	ctx := context.Background()
	m := matchOf(t0.Add(time.Second), tickets...)
	by := m.CreatedAt.Add(10 * time.Second)
	m.State, m.AcceptBy = matcher.MatchPendingAccept, &by
	m.Server = &matcher.Server{Address: "10.0.0.9:7777", Session: m.ID}
	if _, err := commitMatch(ctx, l, m, 0); err != nil {
		t.Fatal(err)
	}
	stored, err := l.Match(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// testAcceptWindow is the contract of Accept, Dissolve and Pending, and of the
// activity a ticket carries: part of testLedger.
func testAcceptWindow(t *testing.T, newLedger func(t *testing.T) matcher.Ledger) {
	t.Run("ActivityIsKept", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		in := ticketFor("ada", "ranked", "eu", t0)
		in.Activity = 0.75
		got := mustCreate(t, l, in)
		read, _ := l.Ticket(ctx, got.ID)
		if got.Activity != 0.75 || read.Activity != 0.75 {
			t.Fatalf("activity created %v, read %v; want 0.75", got.Activity, read.Activity)
		}
		waiting, _ := l.Waiting(ctx, part("ranked", "eu"))
		if len(waiting) != 1 || waiting[0].Activity != 0.75 {
			t.Fatalf("waiting = %+v", waiting)
		}
	})

	t.Run("AcceptAllMakesReady", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		a := mustCreate(t, l, ticketFor("al", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("bea", "ranked", "eu", t0))
		m := pendingMatch(t, l, a, b)
		if m.Accepted != nil || m.State != matcher.MatchPendingAccept || m.Server == nil {
			t.Fatalf("committed %+v", m)
		}
		drainAll(t, l)
		if got, err := l.Pending(ctx, part("ranked", "eu")); err != nil || len(got) != 1 {
			t.Fatalf("pending = %v, %v", got, err)
		} else {
			equal(t, "pending", got[0], m)
		}

		got, events, err := l.Accept(ctx, m.ID, "al", t0.Add(2*time.Second))
		if err != nil || len(events) != 0 {
			t.Fatalf("first accept = %v, %v", events, err)
		}
		want := m
		want.Accepted, want.Version = []string{"al"}, m.Version+1
		equal(t, "after one accept", got, want)
		read, _ := l.Match(ctx, m.ID)
		equal(t, "read back", read, want)

		// Accepting again changes nothing.
		again, events, err := l.Accept(ctx, strings.ToUpper(m.ID), "al", t0.Add(3*time.Second))
		if err != nil || events != nil {
			t.Fatalf("repeated accept = %v, %v", events, err)
		}
		equal(t, "repeated accept", again, want)

		got, events, err = l.Accept(ctx, m.ID, "bea", t0.Add(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		want.Accepted, want.State, want.Version = []string{"al", "bea"}, matcher.MatchReady, want.Version+1
		equal(t, "after every accept", got, want)
		if len(events) != 1 || events[0].ID == 0 || !slices.Equal(events[0].Users, []string{"al", "bea"}) ||
			!bytes.Equal(protocol.Frame(events[0]), protocol.Frame(matcher.MatchReadyEvent(want))) {
			t.Fatalf("events = %+v, want one match.ready", events)
		}
		if p := string(protocol.Frame(events[0])); !strings.Contains(p, `"type":"match.ready"`) || !strings.Contains(p, "10.0.0.9:7777") {
			t.Fatalf("match.ready payload %s lacks the type or the server", p)
		}
		if len(drainAll(t, l)) != 1 {
			t.Fatal("match.ready not in the outbox")
		}
		if got, _ := l.Pending(ctx, part("ranked", "eu")); got != nil {
			t.Fatalf("a READY match is still pending: %v", got)
		}
		// Tickets stay MATCHED in the match.
		for _, tk := range []matcher.Ticket{a, b} {
			if r, _ := l.Ticket(ctx, tk.ID); r.Status != matcher.StatusMatched || r.MatchID != m.ID {
				t.Fatalf("ticket %s is %s/%s", tk.UserID, r.Status, r.MatchID)
			}
		}
		// Accepting a READY match is refused with its state, for the caller
		// to treat as the no-op it is.
		var se *matcher.MatchStateError
		if _, _, err := l.Accept(ctx, m.ID, "al", t0.Add(5*time.Second)); !errors.As(err, &se) || se.Match.State != matcher.MatchReady {
			t.Fatalf("accepting a READY match = %v", err)
		}
	})

	t.Run("AcceptRefusals", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		a := mustCreate(t, l, ticketFor("cy", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("di", "ranked", "eu", t0))
		m := pendingMatch(t, l, a, b)
		var se *matcher.MatchStateError
		if _, _, err := l.Accept(ctx, m.ID, "stranger", t0.Add(2*time.Second)); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("accept by a stranger = %v, want ErrNotFound", err)
		}
		for _, id := range []string{uuid.NewString(), "nope"} {
			if _, _, err := l.Accept(ctx, id, "cy", t0); !errors.Is(err, matcher.ErrNotFound) {
				t.Fatalf("accept of %q = %v, want ErrNotFound", id, err)
			}
		}
		// At AcceptBy exactly the window is closed.
		if _, _, err := l.Accept(ctx, m.ID, "cy", *m.AcceptBy); !errors.As(err, &se) || se.Match.State != matcher.MatchPendingAccept {
			t.Fatalf("accept at the deadline = %v, want MatchStateError", err)
		}
		ready := matchOf(t0, mustCreate(t, l, ticketFor("ed", "ranked", "eu", t0)), mustCreate(t, l, ticketFor("flo", "ranked", "eu", t0)))
		if _, err := commitMatch(ctx, l, ready, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Accept(ctx, ready.ID, "ed", t0); !errors.As(err, &se) || se.Match.State != matcher.MatchReady {
			t.Fatalf("accept of a match without accept step = %v", err)
		}
		read, _ := l.Match(ctx, m.ID)
		equal(t, "refusals changed nothing", read, m)
	})

	t.Run("DeclineDissolves", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		var seats []matcher.Ticket
		for i, u := range []string{"gil", "hal", "ivy"} {
			tk := ticketFor(u, "ranked", "eu", t0.Add(time.Duration(i)*time.Millisecond))
			tk.HeadStart = 2 * time.Second
			seats = append(seats, mustCreate(t, l, tk))
		}
		m := pendingMatch(t, l, seats...)
		if _, _, err := l.Accept(ctx, m.ID, "gil", t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		drainAll(t, l)
		at := t0.Add(3 * time.Second)
		d, events, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "hal", At: at})
		if err != nil {
			t.Fatal(err)
		}
		if d.Match.State != matcher.MatchDissolved || d.Match.Version != m.Version+2 || !slices.Equal(d.Match.Accepted, []string{"gil"}) {
			t.Fatalf("dissolved match %+v", d.Match)
		}
		read, _ := l.Match(ctx, m.ID)
		equal(t, "match read back", read, d.Match)
		// gil accepted and ivy had not answered yet: both keep their place.
		back := func(tk matcher.Ticket) matcher.Ticket {
			tk.Status, tk.UpdatedAt, tk.Version = matcher.StatusWaiting, us(at), 3
			return tk
		}
		equal(t, "requeued", d.Requeued, []matcher.Ticket{back(seats[0]), back(seats[2])})
		declined := seats[1]
		declined.Status, declined.CancelReason, declined.UpdatedAt, declined.Version = matcher.StatusCancelled, matcher.ReasonDeclined, us(at), 3
		equal(t, "cancelled", d.Cancelled, []matcher.Ticket{declined})
		for _, tk := range append(slices.Clone(d.Requeued), d.Cancelled...) {
			r, _ := l.Ticket(ctx, tk.ID)
			equal(t, "ticket read back", r, tk)
		}
		waitingIs(t, l, part("ranked", "eu"), d.Requeued...)
		if got, _ := l.Pending(ctx, part("ranked", "eu")); got != nil {
			t.Fatalf("a DISSOLVED match is still pending: %v", got)
		}
		// Events: match.dissolved to all, then a ticket.update per seat.
		if len(events) != 4 || !bytes.Equal(protocol.Frame(events[0]), protocol.Frame(matcher.MatchDissolvedEvent(d.Match, matcher.ReasonDeclined))) ||
			!slices.Equal(events[0].Users, []string{"gil", "hal", "ivy"}) {
			t.Fatalf("events = %+v", events)
		}
		if p := string(protocol.Frame(events[0])); !strings.Contains(p, `"type":"match.dissolved"`) || !strings.Contains(p, `"reason":"declined"`) || strings.Contains(p, "10.0.0.9") {
			t.Fatalf("match.dissolved payload %s", p)
		}
		for i, tk := range []matcher.Ticket{back(seats[0]), declined, back(seats[2])} {
			if !bytes.Equal(protocol.Frame(events[i+1]), protocol.Frame(matcher.TicketUpdatedEvent(tk))) {
				t.Fatalf("event %d = %s, want the ticket.update of %s", i+1, protocol.Frame(events[i+1]), tk.UserID)
			}
		}
		if n := len(drainAll(t, l)); n != 4 {
			t.Fatalf("outbox holds %d events, want 4", n)
		}
		// A dissolved match takes no accept, decline or second dissolve.
		var se *matcher.MatchStateError
		if _, _, err := l.Accept(ctx, m.ID, "ivy", at); !errors.As(err, &se) || se.Match.State != matcher.MatchDissolved {
			t.Fatalf("accept after dissolve = %v", err)
		}
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "ivy", At: at}); !errors.As(err, &se) {
			t.Fatalf("second dissolve = %v", err)
		}
		// The requeued tickets can be matched again (and cancelled).
		mustResolve(t, l, seats[2].ID, matcher.StatusCancelled, matcher.ReasonUser, at.Add(time.Second))
		again := matchOf(at.Add(2*time.Second), back(seats[0]), mustCreate(t, l, ticketFor("jo", "ranked", "eu", at)))
		if _, err := commitMatch(ctx, l, again, 0); err != nil {
			t.Fatalf("match after dissolve: %v", err)
		}
	})

	t.Run("DeclineRefusals", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		m := pendingMatch(t, l, mustCreate(t, l, ticketFor("kim", "ranked", "eu", t0)), mustCreate(t, l, ticketFor("lou", "ranked", "eu", t0)))
		var se *matcher.MatchStateError
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "stranger", At: t0}); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("decline by a stranger = %v", err)
		}
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: uuid.NewString(), At: t0.Add(time.Hour)}); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("dissolve of an unknown match = %v", err)
		}
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "kim", At: *m.AcceptBy}); !errors.As(err, &se) {
			t.Fatalf("decline after the window = %v", err)
		}
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, At: m.AcceptBy.Add(-time.Microsecond)}); !errors.As(err, &se) {
			t.Fatalf("timeout dissolve before the window closed = %v", err)
		}
		read, _ := l.Match(ctx, m.ID)
		equal(t, "refusals changed nothing", read, m)
		if n := len(drainAll(t, l)); n != 1 { // the match.found
			t.Fatalf("refusals wrote events: %d", n)
		}
	})

	t.Run("TimeoutDissolves", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		a := mustCreate(t, l, ticketFor("max", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("ned", "ranked", "eu", t0))
		c := mustCreate(t, l, ticketFor("ola", "ranked", "eu", t0))
		m := pendingMatch(t, l, a, b, c)
		if _, _, err := l.Accept(ctx, m.ID, "ned", t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Accept(ctx, m.ID, "ola", t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		// ola may not join another queue while the match waits for its
		// accepts (README, "One live match at a time").
		var am *matcher.AlreadyMatchedError
		if _, err := l.CreateTicket(ctx, ticketFor("ola", "casual", "us", t0.Add(3*time.Second))); !errors.As(err, &am) || am.MatchID != m.ID {
			t.Fatalf("join while pending = %v, want AlreadyMatchedError", err)
		}
		d, events, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, At: *m.AcceptBy})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Requeued) != 2 || d.Requeued[0].ID != b.ID || d.Requeued[1].ID != c.ID || len(d.Cancelled) != 1 {
			t.Fatalf("dissolution %+v", d)
		}
		if d.Cancelled[0].ID != a.ID || d.Cancelled[0].CancelReason != matcher.ReasonAcceptTimeout {
			t.Fatalf("cancelled %+v", d.Cancelled)
		}
		if !strings.Contains(string(protocol.Frame(events[0])), `"reason":"accept_timeout"`) {
			t.Fatalf("match.dissolved payload %s", protocol.Frame(events[0]))
		}
		waitingIs(t, l, part("ranked", "eu"), d.Requeued...)
		waitingIs(t, l, part("casual", "us"))
	})

	t.Run("PendingPerPartition", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		m1 := pendingMatch(t, l, mustCreate(t, l, ticketFor("pia", "ranked", "eu", t0)), mustCreate(t, l, ticketFor("quo", "ranked", "eu", t0)))
		other := pendingMatch(t, l, mustCreate(t, l, ticketFor("ray", "ranked", "na", t0)), mustCreate(t, l, ticketFor("sal", "ranked", "na", t0)))
		got, err := l.Pending(ctx, part("ranked", "eu"))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "pending in eu", got, []matcher.Match{m1})
		// A sub-pool names the same (queue, region).
		got, _ = l.Pending(ctx, matcher.Partition{Queue: "ranked", Region: "na", Shard: "s1"})
		equal(t, "pending in na", got, []matcher.Match{other})
		if got, _ := l.Pending(ctx, part("ranked", "us")); got != nil {
			t.Fatalf("pending elsewhere = %v", got)
		}
	})

	t.Run("ShardedCommitUsesTheSubPoolLease", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		ls := l.(leaseSetter)
		if err := ls.SetLeaseEpoch(ctx, "ranked:eu/s1", 4); err != nil {
			t.Fatal(err)
		}
		m := matchOf(t0, mustCreate(t, l, ticketFor("tam", "ranked", "eu", t0)), mustCreate(t, l, ticketFor("uma", "ranked", "eu", t0)))
		if _, err := commitMatch(ctx, l, m, 4); !errors.Is(err, matcher.ErrStaleEpoch) {
			t.Fatalf("commit without the shard = %v, want ErrStaleEpoch", err)
		}
		m.Shard = "s1"
		if _, err := commitMatch(ctx, l, m, 4); err != nil {
			t.Fatal(err)
		}
		if read, _ := l.Match(ctx, m.ID); read.Shard != "" {
			t.Fatalf("shard stored: %q", read.Shard)
		}
	})

	t.Run("RaceOfAcceptsAndDeclines", func(t *testing.T) {
		// Every player of many matches accepts or declines at once: each
		// match ends READY (nobody declined in time) or DISSOLVED, never
		// both, and every ticket agrees with its match.
		l, ctx := newLedger(t), context.Background()
		for i := range 20 {
			var seats []matcher.Ticket
			for j := range 3 {
				seats = append(seats, mustCreate(t, l, ticketFor(strings.Repeat("x", i+1)+string(rune('a'+j)), "ranked", "eu", t0)))
			}
			m := pendingMatch(t, l, seats...)
			var wg sync.WaitGroup
			for j, tk := range seats {
				wg.Go(func() {
					if j == i%4 { // some matches have a decliner, i%4 == 3 has none
						_, _, _ = l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: tk.UserID, At: t0.Add(2 * time.Second)})
					} else {
						_, _, _ = l.Accept(ctx, m.ID, tk.UserID, t0.Add(2*time.Second))
					}
				})
			}
			wg.Wait()
			final, _ := l.Match(ctx, m.ID)
			for _, tk := range seats {
				r, _ := l.Ticket(ctx, tk.ID)
				switch final.State {
				case matcher.MatchReady:
					if r.Status != matcher.StatusMatched || r.MatchID != m.ID {
						t.Fatalf("READY match, ticket %s/%s", r.Status, r.MatchID)
					}
				case matcher.MatchDissolved:
					if r.Status == matcher.StatusMatched || r.MatchID != "" {
						t.Fatalf("DISSOLVED match, ticket %s/%s", r.Status, r.MatchID)
					}
				default:
					t.Fatalf("match %d ended %s", i, final.State)
				}
			}
			if (i%4 == 3) != (final.State == matcher.MatchReady) {
				t.Fatalf("match %d ended %s", i, final.State)
			}
		}
	})
}
