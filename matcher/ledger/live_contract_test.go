package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// testOneLiveMatch is the contract of a join by a player seated in a match:
// refused while the match waits for its accepts, allowed once it is READY
// or dissolved. Part of testLedger.
func testOneLiveMatch(t *testing.T, newLedger func(t *testing.T) matcher.Ledger) {
	t.Run("PendingMatchRefusesJoin", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		a := mustCreate(t, l, ticketFor("ann", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("ben", "ranked", "eu", t0))
		m := pendingMatch(t, l, a, b)
		again := ticketFor("ann", "duel", "eu", t0.Add(2*time.Second))
		_, err := l.CreateTicket(ctx, again)
		var am *matcher.AlreadyMatchedError
		if !errors.As(err, &am) || am.MatchID != m.ID || am.UserID != "ann" {
			t.Fatalf("join while pending = %v, want AlreadyMatchedError naming %s", err, m.ID)
		}
		if _, err := l.Ticket(ctx, again.ID); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("the refused ticket is in the record: %v", err)
		}
		waitingIs(t, l, part("duel", "eu"))
		// Another user is not held back.
		mustCreate(t, l, ticketFor("cal", "duel", "eu", t0))

		// READY: matchgate does not learn when the game ends, so the
		// players may join again.
		for _, u := range []string{"ann", "ben"} {
			if _, _, err := l.Accept(ctx, m.ID, u, t0.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, l, ticketFor("ann", "duel", "eu", t0.Add(3*time.Second)))
	})

	t.Run("DissolvedMatchFreesTheJoin", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		a := mustCreate(t, l, ticketFor("dan", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("eve", "ranked", "eu", t0))
		m := pendingMatch(t, l, a, b)
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "eve", At: t0.Add(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, l, ticketFor("eve", "duel", "eu", t0.Add(3*time.Second)))
		var aq *matcher.AlreadyQueuedError
		if _, err := l.CreateTicket(ctx, ticketFor("dan", "duel", "eu", t0.Add(3*time.Second))); !errors.As(err, &aq) || aq.Existing.ID != a.ID {
			t.Fatalf("join of the requeued player = %v, want AlreadyQueuedError of %s", err, a.ID)
		}
	})

	// A join racing the commit that seats the user's waiting ticket in a
	// pending match is refused, ALREADY_QUEUED before the commit or
	// ALREADY_MATCHED after it: never a WAITING ticket beside a pending
	// match.
	t.Run("JoinRacingAPendingCommit", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		const rounds = 150
		outcomes := map[string]int{}
		for i := range rounds {
			user, mate := fmt.Sprint("r", i), fmt.Sprint("m", i)
			a := mustCreate(t, l, ticketFor(user, "ranked", "eu", t0))
			b := mustCreate(t, l, ticketFor(mate, "ranked", "eu", t0))
			m := matchOf(t0.Add(time.Second), a, b)
			by := m.CreatedAt.Add(10 * time.Second)
			m.State, m.AcceptBy = matcher.MatchPendingAccept, &by
			// Other joins ride along so that the group commit batches them.
			var wg sync.WaitGroup
			for k := range 3 {
				wg.Go(func() { mustCreate(t, l, ticketFor(fmt.Sprint("x", i, "-", k), "duel", "eu", t0)) })
			}
			var joinErr, commitErr error
			wg.Go(func() { _, joinErr = l.CreateTicket(ctx, ticketFor(user, "duel", "eu", t0.Add(time.Second))) })
			wg.Go(func() { _, commitErr = commitMatch(ctx, l, m, 0) })
			wg.Wait()
			var am *matcher.AlreadyMatchedError
			var aq *matcher.AlreadyQueuedError
			switch {
			case commitErr == nil && errors.As(joinErr, &am):
				outcomes["matched, join refused ALREADY_MATCHED"]++
			case commitErr == nil && errors.As(joinErr, &aq):
				outcomes["matched, join refused ALREADY_QUEUED"]++
			default:
				t.Fatalf("round %d: commit %v, join %v", i, commitErr, joinErr)
			}
			if page, err := l.UserState(ctx, user, t0, 100); err != nil {
				t.Fatal(err)
			} else {
				for _, tk := range page.Tickets {
					if tk.Status == matcher.StatusWaiting {
						t.Fatalf("round %d: ticket %s of %s WAITING beside pending match %s", i, tk.ID, user, m.ID)
					}
				}
			}
		}
		t.Logf("outcomes of %d rounds: %v", rounds, outcomes)
	})
}

// testLivePartitions is the contract of LivePartitions. Part of testLedger.
func testLivePartitions(t *testing.T, newLedger func(t *testing.T) matcher.Ledger) {
	t.Run("LivePartitions", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		live := func() []matcher.Partition {
			t.Helper()
			got, err := l.LivePartitions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := live(); got != nil {
			t.Fatalf("empty ledger: %v", got)
		}
		w := mustCreate(t, l, ticketFor("wes", "ranked", "na", t0))
		mustCreate(t, l, ticketFor("xia", "ranked", "na", t0))
		a := mustCreate(t, l, ticketFor("ada", "duel", "eu", t0))
		b := mustCreate(t, l, ticketFor("bo", "duel", "eu", t0))
		c := mustCreate(t, l, ticketFor("cy", "retired", "eu", t0))
		equal(t, "live", live(), []matcher.Partition{part("duel", "eu"), part("ranked", "na"), part("retired", "eu")})

		// A pending match keeps its (queue, region) live with no ticket
		// waiting there; READY does not; a resolved ticket does not.
		m := pendingMatch(t, l, a, b)
		mustResolve(t, l, c.ID, matcher.StatusCancelled, matcher.ReasonUser, t0)
		equal(t, "live with a pending match", live(), []matcher.Partition{part("duel", "eu"), part("ranked", "na")})
		for _, u := range []string{"ada", "bo"} {
			if _, _, err := l.Accept(ctx, m.ID, u, t0.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		equal(t, "live after READY", live(), []matcher.Partition{part("ranked", "na")})
		if _, err := commitMatch(ctx, l, matchOf(t0, w, mustCreate(t, l, ticketFor("yul", "ranked", "na", t0))), 0); err != nil {
			t.Fatal(err)
		}
		equal(t, "live", live(), []matcher.Partition{part("ranked", "na")})
	})
}
