package record_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/provider"
	"github.com/matchgate/matchgate/provider/record"
)

func TestMemory(t *testing.T) {
	testRecord(t, func(*testing.T) provider.Record { return record.NewMemory() })
}

func TestPostgres(t *testing.T) {
	pgtest.Require(t)
	testRecord(t, func(t *testing.T) provider.Record { return record.NewPostgres(pgtest.New(t)) })
}

// t0 has nanoseconds on purpose: both records must store microseconds.
var t0 = time.Date(2031, 3, 4, 5, 6, 7, 123456789, time.UTC)

// us is t as a record returns it.
func us(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

const window = 20 * time.Second

// id and ticket are UUIDs numbered n, in two spaces.
func id(n int) string     { return fmt.Sprintf("a55a0000-0000-4000-8000-%012x", n) }
func ticket(n int) string { return fmt.Sprintf("7e7e0000-0000-4000-8000-%012x", n) }

// offer is assignment n of ticket n to prov in queue, offered at t0 with
// the usual window.
func offer(n int, queue, prov string) provider.Assignment {
	return provider.Assignment{
		ID: id(n), Queue: queue, TicketID: ticket(n), Requester: fmt.Sprint("r", n), Provider: prov,
		Score: 0.75, Parts: map[string]float64{provider.TermSpecialty: 0.5, provider.TermWait: 0.25},
		OfferedAt: t0, AcceptBy: t0.Add(window),
	}
}

// stored is a as Offer records it: OFFERED at version 1, times stamped.
func stored(a provider.Assignment) provider.Assignment {
	a.Status, a.Version = provider.StatusOffered, 1
	a.OfferedAt, a.AcceptBy = us(a.OfferedAt), us(a.AcceptBy)
	if a.AcceptBy.IsZero() {
		a.Status, a.AcceptedAt = provider.StatusAccepted, a.OfferedAt
	}
	return a
}

// testRecord is the behaviour every provider.Record must have. newRecord
// returns an empty record that lives until the end of the test it is given.
func testRecord(t *testing.T, newRecord func(t *testing.T) provider.Record) {
	t.Run("OfferAndRead", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a := offer(1, "care", "p1")
		got := mustOffer(t, r, a, 1)
		want := stored(offer(1, "care", "p1")) // a map of its own
		equal(t, "offered", got, want)
		getIs(t, r, want)
		liveIs(t, r, "care", "p1", want)

		// Parts keep every bit of their values through JSON.
		odd := offer(4, "care", "p4")
		odd.Score = math.Nextafter(1, 2)
		odd.Parts = map[string]float64{"third": 1 / float64(3), "tiny": -1e-300, "huge": math.MaxFloat64, "next": math.Nextafter(0.3, 1)}
		equal(t, "odd numbers", mustOffer(t, r, odd, 1), stored(odd))
		getIs(t, r, stored(odd))

		// Given at once: ACCEPTED from the start, accepted when offered.
		b := offer(2, "care", "p2")
		b.AcceptBy, b.Parts = time.Time{}, nil
		got = mustOffer(t, r, b, 1)
		if got.Status != provider.StatusAccepted || !got.AcceptedAt.Equal(us(t0)) || got.Parts != nil {
			t.Fatalf("assigned at once = %+v", got)
		}
		getIs(t, r, got)

		// The caller's map is not the record's.
		a.Parts[provider.TermSpecialty] = 9
		got.Parts = map[string]float64{"x": 1}
		getIs(t, r, stored(offer(1, "care", "p1")))

		// Any spelling of a UUID names the same assignment; the record
		// answers in the canonical one.
		read, err := r.Get(ctx, strings.ToUpper(id(1)))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "read by an upper-case id", read, want)
		c := offer(3, "care", "p3")
		c.ID, c.TicketID = strings.ToUpper(c.ID), strings.ToUpper(c.TicketID)
		if got := mustOffer(t, r, c, 1); got.ID != id(3) || got.TicketID != ticket(3) {
			t.Fatalf("offered with upper-case ids = %s, %s", got.ID, got.TicketID)
		}

		for _, k := range []string{id(99), "", "not-a-uuid"} {
			if _, err := r.Get(ctx, k); !errors.Is(err, provider.ErrNotFound) {
				t.Errorf("Get(%q) = %v, want ErrNotFound", k, err)
			}
		}
		if live, err := r.Live(ctx, "care", "nobody"); err != nil || live != nil {
			t.Fatalf("Live of nobody = %v, %v; want nil", live, err)
		}
	})

	t.Run("OfferRefusesBadInput", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		bad := map[string]func(*provider.Assignment){
			"no id":             func(a *provider.Assignment) { a.ID = "" },
			"an id not a UUID":  func(a *provider.Assignment) { a.ID = "a-1" },
			"no ticket":         func(a *provider.Assignment) { a.TicketID = "" },
			"a ticket not UUID": func(a *provider.Assignment) { a.TicketID = "t-1" },
			"no queue":          func(a *provider.Assignment) { a.Queue = "" },
			"no requester":      func(a *provider.Assignment) { a.Requester = "" },
			"no provider":       func(a *provider.Assignment) { a.Provider = "" },
			"no offer time":     func(a *provider.Assignment) { a.OfferedAt = time.Time{} },
			"a window of none":  func(a *provider.Assignment) { a.AcceptBy = a.OfferedAt },
			"a window before":   func(a *provider.Assignment) { a.AcceptBy = a.OfferedAt.Add(-time.Second) },
			// t0 is 789ns into its microsecond: both truncate to it.
			"a window under a microsecond": func(a *provider.Assignment) { a.AcceptBy = a.OfferedAt.Add(100 * time.Nanosecond) },
			"a score not a number":         func(a *provider.Assignment) { a.Score = math.NaN() },
			"a part not a number":          func(a *provider.Assignment) { a.Parts = map[string]float64{"load": math.Inf(1)} },
		}
		for name, spoil := range bad {
			a := offer(1, "care", "p1")
			spoil(&a)
			if got, err := r.Offer(ctx, a, 3); err == nil {
				t.Errorf("%s: Offer = %+v", name, got)
			}
		}
		for _, capacity := range []int{0, -1} {
			if _, err := r.Offer(ctx, offer(1, "care", "p1"), capacity); err == nil {
				t.Errorf("capacity %d: Offer succeeded", capacity)
			}
		}
		if _, err := r.Get(ctx, id(1)); !errors.Is(err, provider.ErrNotFound) {
			t.Fatalf("after refused offers: Get = %v, want ErrNotFound", err)
		}
		liveIs(t, r, "care", "p1")
		// The refusals left nothing behind: the good offer passes.
		mustOffer(t, r, offer(1, "care", "p1"), 1)
	})

	t.Run("OneLiveAssignmentPerTicket", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		first := mustOffer(t, r, offer(1, "care", "p1"), 3)
		again := offer(2, "care", "p2")
		again.TicketID = ticket(1)
		// Refused while offered, to another provider and in another queue.
		for _, q := range []string{"care", "other"} {
			again.Queue = q
			if _, err := r.Offer(ctx, again, 3); !errors.Is(err, provider.ErrTicketAssigned) {
				t.Fatalf("second offer of the ticket in %s: %v, want ErrTicketAssigned", q, err)
			}
		}
		// Refused while accepted.
		if _, err := r.Accept(ctx, first.ID, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		again.Queue = "care"
		if _, err := r.Offer(ctx, again, 3); !errors.Is(err, provider.ErrTicketAssigned) {
			t.Fatalf("offer of an accepted ticket: %v, want ErrTicketAssigned", err)
		}
		// Given again once ended.
		if _, err := r.End(ctx, first.ID, "ended", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		mustOffer(t, r, again, 3)
		// And once declined.
		if _, err := r.Decline(ctx, again.ID, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		third := offer(3, "care", "p3")
		third.TicketID = ticket(1)
		mustOffer(t, r, third, 3)
	})

	t.Run("Capacity", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a, b := mustOffer(t, r, offer(1, "care", "p1"), 2), mustOffer(t, r, offer(2, "care", "p1"), 2)
		if _, err := r.Accept(ctx, b.ID, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// Offered and accepted ones both hold a slot.
		if _, err := r.Offer(ctx, offer(3, "care", "p1"), 2); !errors.Is(err, provider.ErrOverCapacity) {
			t.Fatalf("third offer at capacity 2: %v, want ErrOverCapacity", err)
		}
		// The capacity is the caller's: a provider with more slots now has
		// a free one.
		mustOffer(t, r, offer(3, "care", "p1"), 3)
		if _, err := r.Offer(ctx, offer(4, "care", "p1"), 3); !errors.Is(err, provider.ErrOverCapacity) {
			t.Fatalf("fourth offer at capacity 3: %v, want ErrOverCapacity", err)
		}
		// Slots are counted per queue and per provider.
		mustOffer(t, r, offer(4, "other", "p1"), 1)
		mustOffer(t, r, offer(5, "care", "p2"), 1)
		// A slot is freed by a decline, an end or an expiry.
		if _, err := r.Decline(ctx, a.ID, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		mustOffer(t, r, offer(6, "care", "p1"), 3)
		if _, err := r.End(ctx, b.ID, "ended", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		mustOffer(t, r, offer(7, "care", "p1"), 3)
		if _, err := r.Offer(ctx, offer(8, "care", "p1"), 3); !errors.Is(err, provider.ErrOverCapacity) {
			t.Fatalf("offer at capacity after two were freed and taken: %v, want ErrOverCapacity", err)
		}
		if got := mustExpire(t, r, "care", t0.Add(window), 100); len(got) != 4 { // 3, 5, 6, 7
			t.Fatalf("expired %d, want 4", len(got))
		}
		mustOffer(t, r, offer(8, "care", "p1"), 1)
	})

	t.Run("IdempotentOffer", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a := offer(1, "care", "p1")
		first := mustOffer(t, r, a, 1)
		// A retry, later and scored again, finds the stored one, though the
		// provider's one slot is its own.
		retry := a
		retry.Score, retry.OfferedAt, retry.AcceptBy = 0.1, t0.Add(time.Second), t0.Add(time.Hour)
		equal(t, "retry", mustOffer(t, r, retry, 1), first)
		// Whatever became of it.
		declined, err := r.Decline(ctx, a.ID, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "retry after a decline", mustOffer(t, r, a, 1), declined)
		// The id names one offer: another ticket under it is refused.
		other := offer(2, "care", "p1")
		other.ID = a.ID
		if _, err := r.Offer(ctx, other, 1); !errors.Is(err, provider.ErrConflict) {
			t.Fatalf("another offer under a taken id: %v, want ErrConflict", err)
		}
		getIs(t, r, declined)
	})

	t.Run("Accept", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a := mustOffer(t, r, offer(1, "care", "p1"), 3)
		at := t0.Add(time.Second + 999*time.Nanosecond)
		got, err := r.Accept(ctx, a.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		want := a
		want.Status, want.AcceptedAt, want.Version = provider.StatusAccepted, us(at), 2
		equal(t, "accepted", got, want)
		getIs(t, r, want)
		liveIs(t, r, "care", "p1", want)
		// A repeat, even past the window, is answered unchanged.
		again, err := r.Accept(ctx, a.ID, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "accepted again", again, want)

		// The window is closed at AcceptBy, whether or not Expire ran.
		b := mustOffer(t, r, offer(2, "care", "p1"), 3)
		for _, late := range []time.Time{b.AcceptBy, b.AcceptBy.Add(time.Nanosecond), b.AcceptBy.Add(time.Hour)} {
			if _, err := r.Accept(ctx, b.ID, late); !errors.Is(err, provider.ErrConflict) {
				t.Fatalf("accept at %v, window to %v: %v, want ErrConflict", late, b.AcceptBy, err)
			}
		}
		getIs(t, r, b)
		// The last microsecond before it is in.
		if got, err := r.Accept(ctx, b.ID, b.AcceptBy.Add(-time.Microsecond)); err != nil || got.Version != 2 {
			t.Fatalf("accept in the last microsecond = %+v, %v", got, err)
		}

		c := mustOffer(t, r, offer(3, "care", "p1"), 3)
		if _, err := r.Decline(ctx, c.ID, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Accept(ctx, c.ID, t0); !errors.Is(err, provider.ErrConflict) {
			t.Fatalf("accept a declined one: %v, want ErrConflict", err)
		}
		for _, k := range []string{id(99), "nope"} {
			if _, err := r.Accept(ctx, k, t0); !errors.Is(err, provider.ErrNotFound) {
				t.Errorf("accept %q: %v, want ErrNotFound", k, err)
			}
		}
		if _, err := r.Accept(ctx, c.ID, time.Time{}); err == nil {
			t.Error("accept at the zero time succeeded")
		}
	})

	t.Run("Decline", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a := mustOffer(t, r, offer(1, "care", "p1"), 3)
		at := t0.Add(3*time.Second + 5*time.Nanosecond)
		got, err := r.Decline(ctx, a.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		want := a
		want.Status, want.EndedAt, want.EndReason, want.Version = provider.StatusDeclined, us(at), "declined", 2
		equal(t, "declined", got, want)
		getIs(t, r, want)
		liveIs(t, r, "care", "p1")
		again, err := r.Decline(ctx, a.ID, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "declined again", again, want)

		b := mustOffer(t, r, offer(2, "care", "p1"), 3)
		if _, err := r.Accept(ctx, b.ID, t0); err != nil {
			t.Fatal(err)
		}
		c := mustOffer(t, r, offer(3, "care", "p1"), 3)
		mustExpire(t, r, "care", c.AcceptBy, 10)
		for _, k := range []string{b.ID, c.ID} {
			if _, err := r.Decline(ctx, k, t0); !errors.Is(err, provider.ErrConflict) {
				t.Errorf("decline %s: %v, want ErrConflict", k, err)
			}
		}
		if _, err := r.Decline(ctx, id(99), t0); !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("decline an unknown one: %v, want ErrNotFound", err)
		}
	})

	t.Run("End", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		a := mustOffer(t, r, offer(1, "care", "p1"), 3)
		accepted, err := r.Accept(ctx, a.ID, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Hour + time.Nanosecond)
		if _, err := r.End(ctx, a.ID, "", at); err == nil {
			t.Fatal("end without a reason succeeded")
		}
		got, err := r.End(ctx, a.ID, "operator", at)
		if err != nil {
			t.Fatal(err)
		}
		want := accepted
		want.Status, want.EndedAt, want.EndReason, want.Version = provider.StatusEnded, us(at), "operator", 3
		equal(t, "ended", got, want)
		getIs(t, r, want)
		liveIs(t, r, "care", "p1")
		// A repeat, with another reason, is answered unchanged.
		again, err := r.End(ctx, a.ID, "ended", at.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "ended again", again, want)

		b := mustOffer(t, r, offer(2, "care", "p1"), 3)
		if _, err := r.End(ctx, b.ID, "ended", t0); !errors.Is(err, provider.ErrConflict) {
			t.Fatalf("end an offered one: %v, want ErrConflict", err)
		}
		if _, err := r.Decline(ctx, b.ID, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := r.End(ctx, b.ID, "ended", t0); !errors.Is(err, provider.ErrConflict) {
			t.Fatalf("end a declined one: %v, want ErrConflict", err)
		}
		if _, err := r.End(ctx, id(99), "ended", t0); !errors.Is(err, provider.ErrNotFound) {
			t.Fatalf("end an unknown one: %v, want ErrNotFound", err)
		}
		// One given at once is ended as any accepted one.
		c := offer(3, "care", "p1")
		c.AcceptBy = time.Time{}
		mustOffer(t, r, c, 3)
		if got, err := r.End(ctx, c.ID, "ended", at); err != nil || got.Status != provider.StatusEnded || got.Version != 2 {
			t.Fatalf("end one given at once = %+v, %v", got, err)
		}
	})

	t.Run("Expire", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		// Windows closing at t0+10s … t0+1s for 1 … 10 (offered in the
		// reverse order of their deadlines), two sharing t0+5s.
		var offers []provider.Assignment
		for n := 1; n <= 10; n++ {
			a := offer(n, "care", fmt.Sprint("p", n%3))
			a.AcceptBy = t0.Add(time.Duration(11-n) * time.Second)
			if n == 7 {
				a.AcceptBy = t0.Add(5 * time.Second)
			}
			offers = append(offers, mustOffer(t, r, a, 10))
		}
		// Not offers: accepted (8, due at t0+3s) and given at once.
		if _, err := r.Accept(ctx, id(8), t0); err != nil {
			t.Fatal(err)
		}
		now := offer(11, "care", "p1")
		now.AcceptBy = time.Time{}
		mustOffer(t, r, now, 10)
		// Another queue's offer, due.
		elsewhere := mustOffer(t, r, offer(12, "other", "p1"), 10)

		expired := func(ns ...int) []provider.Assignment {
			var out []provider.Assignment
			for _, n := range ns {
				a := offers[n-1]
				a.Status, a.EndReason, a.Version = provider.StatusExpired, "expired", 2
				out = append(out, a)
			}
			return out
		}
		if _, err := r.Expire(ctx, "care", t0, 0); err == nil {
			t.Fatal("Expire with limit 0 succeeded")
		}
		if got := mustExpire(t, r, "care", t0, 10); got != nil {
			t.Fatalf("expired at t0: %+v", got)
		}
		// Due at or before t0+5s: 10, 9, (8 accepted), 6 and 7 (by id), and
		// at most three of them.
		at := t0.Add(5*time.Second + 900*time.Nanosecond)
		want := expired(10, 9, 6)
		for i := range want {
			want[i].EndedAt = us(at)
		}
		equal(t, "first sweep", mustExpire(t, r, "care", at, 3), want)
		want = expired(7)
		want[0].EndedAt = us(at)
		equal(t, "second sweep", mustExpire(t, r, "care", at, 3), want)
		if got := mustExpire(t, r, "care", at, 3); got != nil {
			t.Fatalf("third sweep: %+v", got)
		}
		getIs(t, r, want[0])
		for _, n := range []int{1, 2, 3, 4, 5} {
			getIs(t, r, offers[n-1])
		}
		// An expired offer is neither accepted nor declined after.
		for _, change := range []func() error{
			func() error { _, err := r.Accept(ctx, id(7), t0); return err },
			func() error { _, err := r.Decline(ctx, id(7), t0); return err },
		} {
			if err := change(); !errors.Is(err, provider.ErrConflict) {
				t.Fatalf("change of an expired offer: %v, want ErrConflict", err)
			}
		}
		getIs(t, r, elsewhere)
	})

	t.Run("LiveOrder", func(t *testing.T) {
		r, ctx := newRecord(t), context.Background()
		// Offered at t0+3s, t0+1s, t0+1s, t0+2s, and one ended.
		at := []time.Duration{3, 1, 1, 2, 0}
		var all []provider.Assignment
		for i, d := range at {
			a := offer(9-i, "care", "p1") // ids descending, so id order is not insertion order
			a.OfferedAt, a.AcceptBy = t0.Add(d*time.Second), t0.Add(d*time.Second+window)
			all = append(all, mustOffer(t, r, a, 10))
		}
		if _, err := r.Decline(ctx, all[4].ID, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		mustOffer(t, r, offer(20, "care", "p2"), 10)
		mustOffer(t, r, offer(21, "other", "p1"), 10)
		// Same offer time: id 7 before id 8.
		liveIs(t, r, "care", "p1", all[2], all[1], all[3], all[0])
	})

	t.Run("Races", func(t *testing.T) {
		testRaces(t, newRecord(t))
	})
}

// testRaces races the offers of one provider's slots and of one ticket,
// the retries of one offer, and acceptances against expiries, and counts
// the outcomes.
func testRaces(t *testing.T, r provider.Record) {
	ctx := context.Background()

	t.Run("OffersForTheLastSlots", func(t *testing.T) {
		const rounds, callers, capacity = 50, 64, 3
		for round := range rounds {
			prov := fmt.Sprint("p", round)
			var won, full count
			race(callers, func(i int) {
				n := round*callers + i
				_, err := r.Offer(ctx, offer(n, "care", prov), capacity)
				switch {
				case err == nil:
					won.add(i)
				case errors.Is(err, provider.ErrOverCapacity):
					full.add(i)
				default:
					t.Error(err)
				}
			})
			if won.len() != capacity || full.len() != callers-capacity {
				t.Fatalf("round %d: %d offers won, %d told ErrOverCapacity; want %d and %d",
					round, won.len(), full.len(), capacity, callers-capacity)
			}
			live, err := r.Live(ctx, "care", prov)
			if err != nil || len(live) != capacity {
				t.Fatalf("round %d: %d live, %v; want %d", round, len(live), err, capacity)
			}
			for _, a := range live {
				var winner bool
				for i := range callers {
					winner = winner || (a.ID == id(round*callers+i) && won.has(i))
				}
				if !winner {
					t.Fatalf("round %d: %s is live but no Offer of it won", round, a.ID)
				}
			}
		}
	})

	t.Run("OffersOfOneTicket", func(t *testing.T) {
		const rounds, callers = 10, 32
		for round := range rounds {
			var won, taken count
			race(callers, func(i int) {
				a := offer(100000+round*callers+i, "tickets", fmt.Sprintf("p%d-%d", round, i))
				a.TicketID = ticket(100000 + round)
				_, err := r.Offer(ctx, a, 3)
				switch {
				case err == nil:
					won.add(i)
				case errors.Is(err, provider.ErrTicketAssigned):
					taken.add(i)
				default:
					t.Error(err)
				}
			})
			if won.len() != 1 || taken.len() != callers-1 {
				t.Fatalf("round %d: %d offers won, %d told ErrTicketAssigned; want 1 and %d", round, won.len(), taken.len(), callers-1)
			}
		}
	})

	t.Run("RetriesOfOneOffer", func(t *testing.T) {
		const rounds, callers = 10, 16
		for round := range rounds {
			a := offer(200000+round, "care", "retried")
			got := make([]provider.Assignment, callers)
			race(callers, func(i int) {
				var err error
				if got[i], err = r.Offer(ctx, a, rounds); err != nil {
					t.Error(err)
				}
			})
			for i := range got {
				equal(t, fmt.Sprintf("round %d, caller %d", round, i), got[i], stored(a))
			}
		}
		if live, err := r.Live(ctx, "care", "retried"); err != nil || len(live) != rounds {
			t.Fatalf("%d live after the retries, %v; want %d", len(live), err, rounds)
		}
	})

	t.Run("AcceptVsExpire", func(t *testing.T) {
		const n = 300
		offers := make([]provider.Assignment, n)
		for i := range offers {
			offers[i] = mustOffer(t, r, offer(300000+i, fmt.Sprint("deadline", i), "p1"), 1)
		}
		var accepted, expired, refused count
		race(2*n, func(j int) {
			i, a := j/2, offers[j/2]
			if j%2 == 0 {
				// The last moment the window is open, against the first
				// it is closed.
				_, err := r.Accept(ctx, a.ID, a.AcceptBy.Add(-time.Microsecond))
				switch {
				case err == nil:
					accepted.add(i)
				case errors.Is(err, provider.ErrConflict):
					refused.add(i)
				default:
					t.Error(err)
				}
				return
			}
			got, err := r.Expire(ctx, a.Queue, a.AcceptBy, 10)
			if err != nil {
				t.Error(err)
				return
			}
			for range got {
				expired.add(i)
			}
		})
		accepted.union(&expired).each(t, n, "acceptances and expiries that won")
		refused.each(t, n-accepted.len(), "acceptances told ErrConflict")
		for i, a := range offers {
			got, err := r.Get(ctx, a.ID)
			want := provider.StatusExpired
			if accepted.has(i) {
				want = provider.StatusAccepted
			}
			if err != nil || got.Status != want || got.Version != 2 {
				t.Fatalf("assignment %d = %+v, %v; want %s at version 2", i, got, err, want)
			}
			if refused.has(i) != expired.has(i) {
				t.Fatalf("assignment %d: expired %v, its acceptance refused %v", i, expired.has(i), refused.has(i))
			}
		}
		t.Logf("%d accepted, %d expired", accepted.len(), expired.len())
	})
}

// race runs f(i) for each i < n in goroutines of their own, all at once.
func race(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() { <-start; f(i) })
	}
	close(start)
	wg.Wait()
}

// count is a set of indexes, safe for concurrent adds, that remembers an
// index added twice.
type count struct {
	mu    sync.Mutex
	set   map[int]int
	twice bool
}

func (c *count) add(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		c.set = map[int]int{}
	}
	c.set[i]++
	c.twice = c.twice || c.set[i] > 1
}

func (c *count) has(i int) bool { c.mu.Lock(); defer c.mu.Unlock(); return c.set[i] > 0 }
func (c *count) len() int       { c.mu.Lock(); defer c.mu.Unlock(); return len(c.set) }

// union is c and o together, an index in both counted twice.
func (c *count) union(o *count) *count {
	u := &count{}
	for _, s := range []*count{c, o} {
		for i, k := range s.set {
			for range k {
				u.add(i)
			}
		}
	}
	return u
}

// each fails the test unless c holds n indexes, each once.
func (c *count) each(t *testing.T, n int, what string) {
	t.Helper()
	if c.twice || len(c.set) != n {
		t.Fatalf("%s: %d indexes (some twice: %v); want %d, each once", what, len(c.set), c.twice, n)
	}
}

func mustOffer(tb testing.TB, r provider.Record, a provider.Assignment, capacity int) provider.Assignment {
	tb.Helper()
	got, err := r.Offer(context.Background(), a, capacity)
	if err != nil {
		tb.Fatalf("Offer %s of %s to %s: %v", a.ID, a.TicketID, a.Provider, err)
	}
	return got
}

func mustExpire(tb testing.TB, r provider.Record, queue string, now time.Time, limit int) []provider.Assignment {
	tb.Helper()
	got, err := r.Expire(context.Background(), queue, now, limit)
	if err != nil {
		tb.Fatalf("Expire %s: %v", queue, err)
	}
	return got
}

func getIs(t *testing.T, r provider.Record, want provider.Assignment) {
	t.Helper()
	got, err := r.Get(context.Background(), want.ID)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "assignment "+want.ID, got, want)
}

func liveIs(t *testing.T, r provider.Record, queue, prov string, want ...provider.Assignment) {
	t.Helper()
	got, err := r.Live(context.Background(), queue, prov)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		want = nil
	}
	equal(t, "live of "+prov+" in "+queue, got, want)
}

func equal[T any](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
