package engine

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/matchgate/matchgate/matcher"
)

// fakeReads is a record that knows some tickets, or fails.
type fakeReads struct {
	tickets map[string]matcher.Ticket
	fail    error
	calls   int
}

func (f *fakeReads) Ticket(_ context.Context, id string) (matcher.Ticket, error) {
	f.calls++
	if f.fail != nil {
		return matcher.Ticket{}, f.fail
	}
	t, ok := f.tickets[id]
	if !ok {
		return matcher.Ticket{}, matcher.ErrNotFound
	}
	return t, nil
}

func (f *fakeReads) Match(_ context.Context, id string) (matcher.Match, error) {
	f.calls++
	if f.fail != nil {
		return matcher.Match{}, f.fail
	}
	return matcher.Match{}, matcher.ErrNotFound
}

func (f *fakeReads) UserTickets(_ context.Context, userID string, _ matcher.TicketCursor, _ int) (matcher.TicketPage, error) {
	f.calls++
	if f.fail != nil {
		return matcher.TicketPage{}, f.fail
	}
	var p matcher.TicketPage
	for _, t := range f.tickets {
		if t.UserID == userID {
			p.Tickets = append(p.Tickets, t)
		}
	}
	return p, nil
}

// The replica answers what it knows; the primary what the replica does not
// know yet or cannot answer; a caller's cancelled context is not retried.
func TestReplicaReads(t *testing.T) {
	ctx := context.Background()
	replica := &fakeReads{tickets: map[string]matcher.Ticket{"a": {ID: "a", UserID: "u", Version: 3}}}
	primary := &fakeReads{tickets: map[string]matcher.Ticket{"a": {ID: "a", UserID: "u", Version: 4}, "b": {ID: "b", UserID: "u", Version: 1}}}
	r := replicaReads{replica: replica, primary: primary, log: slog.New(slog.DiscardHandler)}

	if tk, err := r.Ticket(ctx, "a"); err != nil || tk.Version != 3 || primary.calls != 0 {
		t.Fatalf("a known to the replica: %+v %v, %d calls to the primary", tk, err, primary.calls)
	}
	if tk, err := r.Ticket(ctx, "b"); err != nil || tk.ID != "b" || primary.calls != 1 {
		t.Fatalf("b not on the replica yet: %+v %v, %d calls to the primary", tk, err, primary.calls)
	}
	if _, err := r.Ticket(ctx, "c"); !errors.Is(err, matcher.ErrNotFound) {
		t.Fatalf("c known to neither: %v", err)
	}
	if p, err := r.UserTickets(ctx, "u", matcher.TicketCursor{}, 10); err != nil || len(p.Tickets) != 1 {
		t.Fatalf("history from the replica: %+v %v", p, err)
	}

	replica.fail = errors.New("replica away")
	primary.calls = 0
	if tk, err := r.Ticket(ctx, "a"); err != nil || tk.Version != 4 {
		t.Fatalf("replica away: %+v %v", tk, err)
	}
	if p, err := r.UserTickets(ctx, "u", matcher.TicketCursor{}, 10); err != nil || len(p.Tickets) != 2 {
		t.Fatalf("history with the replica away: %+v %v", p, err)
	}
	if primary.calls != 2 {
		t.Fatalf("%d calls to the primary, want 2", primary.calls)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	replica.fail = context.Canceled
	if _, err := r.Ticket(cancelled, "a"); !errors.Is(err, context.Canceled) || primary.calls != 2 {
		t.Fatalf("cancelled read: %v, %d calls to the primary", err, primary.calls)
	}
}
