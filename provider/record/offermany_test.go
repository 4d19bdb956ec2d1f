package record_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/provider"
	"github.com/matchgate/matchgate/provider/record"
)

func TestOfferManyMemory(t *testing.T) {
	testOfferMany(t, func() provider.Record { return record.NewMemory() })
}

func TestOfferManyPostgres(t *testing.T) {
	pgtest.Require(t)
	testOfferMany(t, func() provider.Record { return record.NewPostgres(pgtest.New(t)) })
}

// kindOf names an offer's outcome.
func kindOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, provider.ErrOverCapacity):
		return "over"
	case errors.Is(err, provider.ErrTicketAssigned):
		return "assigned"
	case errors.Is(err, provider.ErrConflict):
		return "conflict"
	}
	return "invalid"
}

// OfferMany decides each offer as Offer would, in order, in one batch;
// and batches racing over the same providers never take a slot past a
// capacity.
func testOfferMany(t *testing.T, newRecord func() provider.Record) {
	ctx := context.Background()
	r := newRecord()
	held := offer(1, "advice", "ana")
	mustOffer(t, r, held, 2)
	repeatOf := offer(1, "advice", "ana") // the same id: a retry
	sameTicket := offer(7, "advice", "bo")
	sameTicket.TicketID = held.TicketID
	twice := offer(8, "advice", "cy")
	twiceAgain := offer(9, "advice", "cy")
	twiceAgain.TicketID = twice.TicketID
	invalid := offer(10, "advice", "")
	req := func(a provider.Assignment, capacity int) provider.OfferRequest {
		return provider.OfferRequest{Assignment: a, Capacity: capacity}
	}
	reqs := []provider.OfferRequest{
		req(offer(2, "advice", "ana"), 2), // ana's second slot
		req(offer(3, "advice", "ana"), 2), // over: ana holds 2
		req(repeatOf, 2),                  // a repeat is answered, full or not
		req(sameTicket, 5),                // the ticket holds ana's offer
		req(twice, 1), req(twiceAgain, 1), // one ticket twice in the batch
		req(invalid, 1),
		req(offer(11, "advice", "bo"), 1), req(offer(12, "advice", "bo"), 1),
	}
	res, err := r.OfferMany(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ok", "over", "ok", "assigned", "ok", "assigned", "invalid", "ok", "over"}
	for i, w := range want {
		if got := kindOf(res[i].Err); got != w {
			t.Errorf("offer %d: %s (%v), want %s", i, got, res[i].Err, w)
		}
		if res[i].Err == nil && res[i].Assignment.ID != reqs[i].Assignment.ID {
			t.Errorf("offer %d answered %s", i, res[i].Assignment.ID)
		}
	}
	getIs(t, r, stored(offer(2, "advice", "ana")))
	equal(t, "the repeat's answer", res[2].Assignment, stored(held))

	// Batches racing: 8 at once, 40 rounds, each offering every one of 6
	// providers (capacity 2) fresh tickets.
	race := newRecord()
	over := 0
	for round := range 40 {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				var batch []provider.OfferRequest
				for p := range 6 {
					n := 1000 + round*1000 + g*10 + p
					batch = append(batch, provider.OfferRequest{Assignment: offer(n, "race", fmt.Sprint("p", p)), Capacity: 2})
				}
				if _, err := race.OfferMany(ctx, batch); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for p := range 6 {
			live, err := race.Live(ctx, "race", fmt.Sprint("p", p))
			if err != nil {
				t.Fatal(err)
			}
			if len(live) != 2 {
				over++
				t.Errorf("round %d: p%d holds %d live offers, want exactly its capacity of 2", round, p, len(live))
			}
			for _, a := range live {
				if _, err := race.Decline(ctx, a.ID, t0); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if over > 0 {
		t.Fatalf("%d rounds off capacity", over)
	}
}
