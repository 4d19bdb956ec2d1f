package record_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/provider"
	"github.com/matchgate/matchgate/provider/record"
)

func TestRefusedMemory(t *testing.T) { testRefused(t, record.NewMemory()) }

func TestRefusedPostgres(t *testing.T) {
	pgtest.Require(t)
	testRefused(t, record.NewPostgres(pgtest.New(t)))
}

// Refused lists the providers that declined a ticket's offer or let it
// expire, by ticket, in the queue asked; not those that accepted, hold
// it still or ended a session with it.
func testRefused(t *testing.T, r provider.Record) {
	ctx := context.Background()
	// Ticket 1: declined by ana, expired with bo, then accepted by cy.
	a := offer(1, "advice", "ana")
	mustOffer(t, r, a, 3)
	if _, err := r.Decline(ctx, a.ID, t0); err != nil {
		t.Fatal(err)
	}
	b := offer(2, "advice", "bo")
	b.TicketID = a.TicketID
	mustOffer(t, r, b, 3)
	mustExpire(t, r, "advice", t0.Add(window), 10)
	c := offer(3, "advice", "cy")
	c.TicketID = a.TicketID
	mustOffer(t, r, c, 3)
	if _, err := r.Accept(ctx, c.ID, t0); err != nil {
		t.Fatal(err)
	}
	// Ticket 4: offered, still open. Ticket 5: declined in another queue.
	mustOffer(t, r, offer(4, "advice", "ana"), 3)
	e := offer(5, "other", "ana")
	mustOffer(t, r, e, 3)
	if _, err := r.Decline(ctx, e.ID, t0); err != nil {
		t.Fatal(err)
	}
	// Asked by another spelling of the id, and with ids naming nothing.
	upper := strings.ToUpper(a.TicketID)
	got, err := r.Refused(ctx, "advice", []string{upper, ticket(4), e.TicketID, "not-a-uuid", ticket(99)})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]string{upper: {"ana", "bo"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Refused = %v, want %v", got, want)
	}
	if got, err := r.Refused(ctx, "other", []string{e.TicketID}); err != nil || !reflect.DeepEqual(got, map[string][]string{e.TicketID: {"ana"}}) {
		t.Fatalf("Refused in other = %v, %v", got, err)
	}
	if got, err := r.Refused(ctx, "advice", nil); err != nil || len(got) != 0 {
		t.Fatalf("Refused of nothing = %v, %v", got, err)
	}
}
