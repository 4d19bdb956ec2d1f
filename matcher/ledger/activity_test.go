package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// activityLedger is a ledger with the rankings' count of its record.
type activityLedger interface {
	matcher.Ledger
	Activity(ctx context.Context, from, to time.Time) ([]matcher.QueueActivity, error)
}

func TestMemoryActivity(t *testing.T) {
	testActivity(t, func(*testing.T) activityLedger { return ledger.NewMemory() })
}

func TestPostgresActivity(t *testing.T) {
	pgtest.Require(t)
	testActivity(t, func(t *testing.T) activityLedger { return ledger.NewPostgres(pgtest.New(t)) })
}

func mustActivity(t *testing.T, l activityLedger, from, to time.Time) []matcher.QueueActivity {
	t.Helper()
	as, err := l.Activity(context.Background(), from, to)
	if err != nil {
		t.Fatalf("Activity: %v", err)
	}
	return as
}

// testActivity is the contract of Activity both ledgers pass.
func testActivity(t *testing.T, newLedger func(t *testing.T) activityLedger) {
	h := t0.Truncate(time.Hour) // 05:00
	t.Run("CountsPerQueuePerHour", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		// Hour h: ann, bo and cy join ranked; ann and bo are matched; cy
		// cancels. dee joins casual; eve joins ranked at the hour's
		// last microsecond and is cancelled by the heartbeat.
		ann := mustCreate(t, l, ticketFor("ann", "ranked", "eu", h.Add(time.Minute)))
		bo := mustCreate(t, l, ticketFor("bo", "ranked", "us", h.Add(2*time.Minute)))
		cy := mustCreate(t, l, ticketFor("cy", "ranked", "eu", h.Add(3*time.Minute)))
		dee := mustCreate(t, l, ticketFor("dee", "casual", "eu", h.Add(4*time.Minute)))
		last := h.Add(time.Hour - time.Microsecond)
		eve := mustCreate(t, l, ticketFor("eve", "ranked", "eu", last))
		m := matchOf(h.Add(5*time.Minute), ann, bo)
		if _, err := commitMatch(ctx, l, m, 0); err != nil {
			t.Fatal(err)
		}
		mustResolve(t, l, cy.ID, matcher.StatusCancelled, matcher.ReasonUser, h.Add(6*time.Minute))
		// Hour h+1: eve's heartbeat cancel and dee's expiry count nothing;
		// fay joins and cancels.
		mustResolve(t, l, eve.ID, matcher.StatusCancelled, matcher.ReasonHeartbeat, h.Add(time.Hour))
		mustResolve(t, l, dee.ID, matcher.StatusExpired, "", h.Add(61*time.Minute))
		fay := mustCreate(t, l, ticketFor("fay", "ranked", "eu", h.Add(time.Hour)))
		mustResolve(t, l, fay.ID, matcher.StatusCancelled, matcher.ReasonUser, h.Add(time.Hour+time.Second))

		got := mustActivity(t, l, h, h.Add(2*time.Hour))
		equal(t, "two hours", got, []matcher.QueueActivity{
			{Queue: "casual", Hour: h, Joins: 1, FirstJoin: h.Add(4 * time.Minute)},
			{
				Queue: "ranked", Hour: h, Joins: 4, Matches: 1, Cancels: 1,
				FirstJoin: h.Add(time.Minute), FirstMatch: h.Add(5 * time.Minute), FirstCancel: h.Add(6 * time.Minute),
			},
			{
				Queue: "ranked", Hour: h.Add(time.Hour), Joins: 1, Cancels: 1,
				FirstJoin: h.Add(time.Hour), FirstCancel: h.Add(time.Hour + time.Second),
			},
		})
		// [from, to): the second hour alone; the first alone.
		equal(t, "second hour", mustActivity(t, l, h.Add(time.Hour), h.Add(2*time.Hour)), got[2:])
		equal(t, "first hour", mustActivity(t, l, h, h.Add(time.Hour)), got[:2])
		// A span inside an hour counts only its instants.
		equal(t, "last microsecond", mustActivity(t, l, last, h.Add(time.Hour)), []matcher.QueueActivity{
			{Queue: "ranked", Hour: h, Joins: 1, FirstJoin: last},
		})
		equal(t, "empty span", mustActivity(t, l, h.Add(3*time.Hour), h.Add(4*time.Hour)), []matcher.QueueActivity{})
		if _, err := l.Activity(ctx, h.Add(time.Hour), h); err == nil {
			t.Fatal("Activity of a reversed span succeeded")
		}
	})

	t.Run("RequeuedTicketCountsOnce", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		var seats []matcher.Ticket
		for i, u := range []string{"gil", "hal"} {
			seats = append(seats, mustCreate(t, l, ticketFor(u, "ranked", "eu", t0.Add(time.Duration(i)*time.Millisecond))))
		}
		m := pendingMatch(t, l, seats...) // created at t0+1s
		d, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "hal", At: t0.Add(3 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Requeued) != 1 || d.Requeued[0].UserID != "gil" {
			t.Fatalf("requeued %+v, want gil's ticket", d.Requeued)
		}
		// gil is matched again: one join, two matches; hal's decline is
		// not a user cancel.
		again := matchOf(t0.Add(4*time.Second), d.Requeued[0])
		if _, err := commitMatch(ctx, l, again, 0); err != nil {
			t.Fatal(err)
		}
		h := t0.Truncate(time.Hour)
		equal(t, "after a requeue", mustActivity(t, l, h, h.Add(time.Hour)), []matcher.QueueActivity{{
			Queue: "ranked", Hour: h, Joins: 2, Matches: 2,
			FirstJoin: us(t0), FirstMatch: us(t0.Add(time.Second)),
		}})
	})
}
