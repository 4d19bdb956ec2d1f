package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/protocol"
)

func TestMemory(t *testing.T) {
	testLedger(t, func(*testing.T) matcher.Ledger { return ledger.NewMemory() })
}

func TestPostgres(t *testing.T) {
	pgtest.Require(t)
	testLedger(t, func(t *testing.T) matcher.Ledger { return ledger.NewPostgres(pgtest.New(t)) })
}

// leaseSetter is implemented by both ledgers beyond matcher.Ledger, for the
// lease code to record a new owner's epoch.
type leaseSetter interface {
	SetLeaseEpoch(ctx context.Context, partition string, epoch int64) error
}

// t0 has nanoseconds on purpose: both ledgers must store microseconds.
var t0 = time.Date(2031, 3, 4, 5, 6, 7, 123456789, time.UTC)

// us is t as a ledger returns it.
func us(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// testLedger is the behaviour every matcher.Ledger must have. newLedger
// returns an empty ledger that lives until the end of the test it is given.
func testLedger(t *testing.T, newLedger func(t *testing.T) matcher.Ledger) {
	t.Run("CreateAndRead", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		in := ticketFor("alice", "ranked", "eu", t0)
		in.ID = strings.ToUpper(in.ID) // any uuid form; canonical form back
		in.Attributes = map[string]string{"mode": "duel"}
		in.HeadStart = 1500*time.Millisecond + 7*time.Microsecond
		in.Estimated = true
		got, err := l.CreateTicket(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.ID = strings.ToLower(in.ID)
		want.Status = matcher.StatusWaiting
		want.HeadStart = 1500 * time.Millisecond
		want.EnqueuedAt, want.Deadline = us(in.EnqueuedAt), us(in.Deadline)
		want.UpdatedAt = want.EnqueuedAt
		want.Version = 1
		equal(t, "created", got, want)
		read, err := l.Ticket(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "read back", read, want)

		for _, id := range []string{uuid.NewString(), "not-a-uuid", ""} {
			if _, err := l.Ticket(ctx, id); !errors.Is(err, matcher.ErrNotFound) {
				t.Errorf("Ticket(%q) = %v, want ErrNotFound", id, err)
			}
			if _, err := l.Match(ctx, id); !errors.Is(err, matcher.ErrNotFound) {
				t.Errorf("Match(%q) = %v, want ErrNotFound", id, err)
			}
		}
		if events := drainAll(t, l); len(events) != 0 {
			t.Errorf("a join wrote %d outbox events, want none", len(events))
		}
	})

	t.Run("CreateRefusesBadInput", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		bad := map[string]func(*matcher.Ticket){
			"invalid id":   func(tk *matcher.Ticket) { tk.ID = "ticket-1" },
			"no user":      func(tk *matcher.Ticket) { tk.UserID = "" },
			"no region":    func(tk *matcher.Ticket) { tk.Region = "" },
			"NaN skill":    func(tk *matcher.Ticket) { tk.Skill = math.NaN() },
			"not WAITING":  func(tk *matcher.Ticket) { tk.Status = matcher.StatusMatched },
			"negative lag": func(tk *matcher.Ticket) { tk.HeadStart = -time.Second },
			"unclean name": func(tk *matcher.Ticket) { tk.Name = "\u202eAda  " },
		}
		for name, spoil := range bad {
			tk := ticketFor("bob", "ranked", "eu", t0)
			spoil(&tk)
			if _, err := l.CreateTicket(ctx, tk); err == nil {
				t.Errorf("%s: CreateTicket succeeded", name)
			}
		}
		waitingIs(t, l, part("ranked", "eu"))
	})

	t.Run("OneWaitingTicketPerUser", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		first := mustCreate(t, l, ticketFor("carol", "ranked", "eu", t0))
		_, err := l.CreateTicket(ctx, ticketFor("carol", "casual", "us", t0.Add(time.Second)))
		var aq *matcher.AlreadyQueuedError
		if !errors.As(err, &aq) {
			t.Fatalf("second join = %v, want AlreadyQueuedError", err)
		}
		equal(t, "existing ticket", aq.Existing, first)
		// A retried join with the same ticket id is told the same.
		if _, err := l.CreateTicket(ctx, first); !errors.As(err, &aq) || aq.Existing.ID != first.ID {
			t.Fatalf("retried join = %v, want AlreadyQueuedError with %s", err, first.ID)
		}
		// Other users are not affected.
		mustCreate(t, l, ticketFor("dave", "ranked", "eu", t0))

		mustResolve(t, l, first.ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(time.Second))
		again := mustCreate(t, l, ticketFor("carol", "casual", "us", t0.Add(2*time.Second)))
		if again.ID == first.ID {
			t.Fatal("rejoin reused the old ticket")
		}
		// The resolved ticket's id cannot be reused for a new ticket.
		reuse := ticketFor("erin", "ranked", "eu", t0)
		reuse.ID = first.ID
		if _, err := l.CreateTicket(ctx, reuse); err == nil || errors.As(err, &aq) {
			t.Fatalf("reusing a ticket id = %v, want a plain error", err)
		}
	})

	t.Run("ConcurrentJoinsOfOneUser", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		const joins = 12
		var (
			mu      sync.Mutex
			won     []string
			pointed = make(map[string]int) // ticket id → joins told it exists
			wg      sync.WaitGroup
			start   = make(chan struct{})
		)
		for i := range joins {
			wg.Go(func() {
				<-start
				tk, err := l.CreateTicket(ctx, ticketFor("rita", "ranked", fmt.Sprint("r", i%3), t0))
				var aq *matcher.AlreadyQueuedError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, tk.ID)
				case errors.As(err, &aq):
					pointed[aq.Existing.ID]++
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(won) != 1 || pointed[won[0]] != joins-1 {
			t.Fatalf("winners %v, refused joins told %v; want one winner named by all the others", won, pointed)
		}
	})

	t.Run("ResolveIsCompareAndSet", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		tk := mustCreate(t, l, ticketFor("frank", "ranked", "eu", t0))
		at := t0.Add(1500 * time.Millisecond)
		got, events, err := l.Resolve(ctx, tk.ID, matcher.StatusCancelled, matcher.ReasonHeartbeat, at)
		if err != nil {
			t.Fatal(err)
		}
		want := tk
		want.Status, want.CancelReason, want.UpdatedAt, want.Version = matcher.StatusCancelled, matcher.ReasonHeartbeat, us(at), 2
		equal(t, "resolved", got, want)
		read, _ := l.Ticket(ctx, tk.ID)
		equal(t, "read back", read, want)
		if len(events) != 1 || events[0].ID == 0 || !slices.Equal(events[0].Users, []string{"frank"}) ||
			!bytes.Equal(protocol.Frame(events[0]), protocol.Frame(matcher.TicketUpdatedEvent(want))) {
			t.Fatalf("events = %+v, want one ticket.update for frank with its id", events)
		}

		_, events, err = l.Resolve(ctx, tk.ID, matcher.StatusExpired, "", at.Add(time.Second))
		var nw *matcher.NotWaitingError
		if !errors.As(err, &nw) || events != nil {
			t.Fatalf("second resolve = %v, %v; want NotWaitingError and no events", events, err)
		}
		equal(t, "current state", nw.Ticket, want)

		for _, id := range []string{uuid.NewString(), "nope"} {
			if _, _, err := l.Resolve(ctx, id, matcher.StatusExpired, "", at); !errors.Is(err, matcher.ErrNotFound) {
				t.Errorf("Resolve(%q) = %v, want ErrNotFound", id, err)
			}
		}
		other := mustCreate(t, l, ticketFor("gina", "ranked", "eu", t0))
		for _, s := range []matcher.TicketStatus{matcher.StatusMatched, matcher.StatusWaiting, "LOST"} {
			if _, _, err := l.Resolve(ctx, other.ID, s, "", at); err == nil {
				t.Errorf("Resolve to %s succeeded", s)
			}
		}
		read, _ = l.Ticket(ctx, other.ID)
		equal(t, "untouched", read, other)

		// EXPIRED carries no reason; the event announces it with the user.
		exp, events, err := l.Resolve(ctx, other.ID, matcher.StatusExpired, "", at)
		if err != nil || exp.Status != matcher.StatusExpired || exp.CancelReason != "" || len(events) != 1 {
			t.Fatalf("expire = %+v, %v, %v", exp, events, err)
		}
		if got := eventIDs(drainAll(t, l)); len(got) != 2 {
			t.Fatalf("outbox holds %d events, want 2", len(got))
		}
	})

	t.Run("CommitMatch", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		a := mustCreate(t, l, ticketFor("hank", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("iris", "ranked", "eu", t0.Add(time.Second)))
		bystander := mustCreate(t, l, ticketFor("jack", "ranked", "eu", t0))
		acceptBy := t0.Add(15*time.Second + 999)
		m := matchOf(t0.Add(5*time.Second+1), a, b)
		m.State, m.AcceptBy, m.Spread, m.Bots = matcher.MatchPendingAccept, &acceptBy, 0.1+0.2, 1
		m.Server = &matcher.Server{Address: "10.0.0.7:7777", Session: "s-1"}
		m.Players[0].Skill = 1e21 // jsonb must hand back the same float64
		events, err := commitMatch(ctx, l, m, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := m
		want.CreatedAt, want.Version = us(m.CreatedAt), 1
		at := us(acceptBy)
		want.AcceptBy = &at
		stored, err := l.Match(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "match", stored, want)

		for _, tk := range []matcher.Ticket{a, b} {
			got, _ := l.Ticket(ctx, tk.ID)
			w := tk
			w.Status, w.MatchID, w.UpdatedAt, w.Version = matcher.StatusMatched, m.ID, want.CreatedAt, 2
			equal(t, "seated ticket", got, w)
		}
		waitingIs(t, l, part("ranked", "eu"), bystander)

		if len(events) != 1 || events[0].ID == 0 || !slices.Equal(events[0].Users, []string{"hank", "iris"}) ||
			!bytes.Equal(protocol.Frame(events[0]), protocol.Frame(matcher.MatchFoundEvent(want))) {
			t.Fatalf("events = %+v, want one match.found for both players", events)
		}
		drained := drainAll(t, l)
		if len(drained) != 1 || drained[0].ID != events[0].ID || !bytes.Equal(protocol.Frame(drained[0]), protocol.Frame(events[0])) ||
			!slices.Equal(drained[0].Users, events[0].Users) || !drained[0].CreatedAt.Equal(events[0].CreatedAt) {
			t.Fatalf("drained %+v, want the returned event %+v", drained, events)
		}
		p := string(protocol.Frame(drained[0]))
		if !strings.Contains(p, `"type":"match.found"`) || !strings.Contains(p, m.ID) {
			t.Fatalf("payload %s lacks the type or the match id", p)
		}

		// A retry of a commit whose reply was lost succeeds and writes nothing.
		if events, err := commitMatch(ctx, l, m, 0); err != nil || events != nil {
			t.Fatalf("retried commit = %v, %v; want success without events", events, err)
		}
		if n := len(drainAll(t, l)); n != 0 {
			t.Fatalf("retried commit wrote %d events", n)
		}
	})

	t.Run("NamesSurviveTheRecord", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		// Joins at once, so that PostgreSQL's group commit writes some of
		// them in one batch.
		const n = 8
		tickets := make([]matcher.Ticket, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				tk := ticketFor(fmt.Sprintf("named-%d", i), "ranked", "eu", t0.Add(time.Duration(i)*time.Millisecond))
				if i%4 != 3 { // and some without a name
					tk.Name = fmt.Sprintf("Ada «%d» ✨", i)
				}
				got, err := l.CreateTicket(ctx, tk)
				if err != nil {
					t.Errorf("create %d: %v", i, err)
				}
				if got.Name != tk.Name {
					t.Errorf("created %d with name %q, want %q", i, got.Name, tk.Name)
				}
				tickets[i] = got
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		for _, tk := range tickets {
			read, err := l.Ticket(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "read back", read, tk)
		}
		waiting, err := l.Waiting(ctx, part("ranked", "eu"))
		if err != nil || len(waiting) != n {
			t.Fatalf("waiting = %d tickets, %v", len(waiting), err)
		}
		for _, w := range waiting {
			if i := slices.IndexFunc(tickets, func(tk matcher.Ticket) bool { return tk.ID == w.ID }); i < 0 || w.Name != tickets[i].Name {
				t.Fatalf("waiting %s has name %q", w.ID, w.Name)
			}
		}

		m := matchOf(t0.Add(time.Second), tickets[0], tickets[3])
		events, err := commitMatch(ctx, l, m, 0)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := l.Match(ctx, m.ID)
		if err != nil || stored.Players[0].Name != tickets[0].Name || stored.Players[1].Name != "" {
			t.Fatalf("stored players %+v, %v", stored.Players, err)
		}
		gone := mustResolve(t, l, tickets[1].ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(2*time.Second))
		if gone.Name != tickets[1].Name {
			t.Fatalf("resolved ticket has name %q, want %q", gone.Name, tickets[1].Name)
		}
		drained := drainAll(t, l)
		if len(events) != 1 || len(drained) != 2 {
			t.Fatalf("events %d, drained %d; want 1 and 2", len(events), len(drained))
		}
		found := string(protocol.Frame(drained[0]))
		if !strings.Contains(found, `"name":"Ada «0» ✨"`) || strings.Count(found, `"name":`) != 1 {
			t.Fatalf("match.found from the outbox: %s", found)
		}
		if update := string(protocol.Frame(drained[1])); !strings.Contains(update, `"name":"Ada «1» ✨"`) {
			t.Fatalf("ticket.update from the outbox: %s", update)
		}
		page, err := l.UserState(ctx, tickets[0].UserID, t0, 10)
		if err != nil || len(page.Tickets) != 1 || page.Tickets[0].Name != tickets[0].Name ||
			len(page.Matches) != 1 || page.Matches[0].Players[0].Name != tickets[0].Name {
			t.Fatalf("user state %+v, %v", page, err)
		}
	})

	t.Run("CommitMatchRefusesBadInput", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		a := mustCreate(t, l, ticketFor("kate", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("liam", "ranked", "eu", t0))
		bad := map[string]matcher.Match{
			"no players":    matchOf(t0),
			"seated twice":  matchOf(t0, a, a),
			"invalid id":    func() matcher.Match { m := matchOf(t0, a, b); m.ID = "m1"; return m }(),
			"invalid seat":  func() matcher.Match { m := matchOf(t0, a, b); m.Players[1].TicketID = "x"; return m }(),
			"same user":     func() matcher.Match { m := matchOf(t0, a, b); m.Players[1].UserID = a.UserID; return m }(),
			"infinite skew": func() matcher.Match { m := matchOf(t0, a, b); m.Spread = math.Inf(1); return m }(),
		}
		for name, m := range bad {
			if _, err := commitMatch(ctx, l, m, 0); err == nil {
				t.Errorf("%s: CommitMatch succeeded", name)
			}
		}
		waitingIs(t, l, part("ranked", "eu"), a, b)
		if n := len(drainAll(t, l)); n != 0 {
			t.Fatalf("refused commits wrote %d events", n)
		}
	})

	t.Run("CommitMatchShortfall", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		var seats []matcher.Ticket
		for i := range 4 {
			seats = append(seats, mustCreate(t, l, ticketFor(fmt.Sprint("u", i), "ranked", "eu", t0.Add(time.Duration(i)*time.Second))))
		}
		mustResolve(t, l, seats[1].ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(time.Minute))
		cancelEvent := drainAll(t, l)
		m := matchOf(t0.Add(2*time.Minute), seats...)
		m.Players = append(m.Players, matcher.Player{TicketID: uuid.NewString(), UserID: "ghost"}) // never existed
		events, err := commitMatch(ctx, l, m, 0)
		var sf *matcher.ShortfallError
		if !errors.As(err, &sf) || events != nil {
			t.Fatalf("commit = %v, %v; want ShortfallError and no events", events, err)
		}
		want := []string{seats[0].ID, seats[2].ID, seats[3].ID}
		slices.Sort(want)
		if !slices.Equal(sf.Waiting, want) {
			t.Fatalf("still waiting = %v, want %v (sorted)", sf.Waiting, want)
		}
		waitingIs(t, l, part("ranked", "eu"), seats[0], seats[2], seats[3])
		if _, err := l.Match(ctx, m.ID); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("match after shortfall: %v, want ErrNotFound", err)
		}
		if n := len(drainAll(t, l)); n != 0 || len(cancelEvent) != 1 {
			t.Fatalf("shortfall wrote %d events", n)
		}

		// Every seat gone: an empty list, still a shortfall.
		mustResolve(t, l, seats[0].ID, matcher.StatusExpired, "", t0.Add(time.Minute))
		_, err = commitMatch(ctx, l, matchOf(t0.Add(time.Hour), seats[0], seats[1]), 0)
		if !errors.As(err, &sf) || sf.Waiting == nil || len(sf.Waiting) != 0 {
			t.Fatalf("commit of resolved tickets = %v, want ShortfallError with an empty list", err)
		}
	})

	t.Run("CommitMatchStaleEpoch", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		ls, ok := l.(leaseSetter)
		if !ok {
			t.Fatalf("%T has no SetLeaseEpoch", l)
		}
		a := mustCreate(t, l, ticketFor("mia", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("noah", "ranked", "eu", t0))
		m := matchOf(t0.Add(time.Second), a, b)

		// No owner recorded yet: any epoch is stale.
		if _, err := commitMatch(ctx, l, m, 1); !errors.Is(err, matcher.ErrStaleEpoch) {
			t.Fatalf("commit without a lease = %v, want ErrStaleEpoch", err)
		}
		if e, err := l.LeaseEpoch(ctx, "ranked:eu"); err != nil || e != 0 {
			t.Fatalf("epoch before any owner = %d, %v", e, err)
		}
		if err := ls.SetLeaseEpoch(ctx, "ranked:eu", 2); err != nil {
			t.Fatal(err)
		}
		if e, err := l.LeaseEpoch(ctx, "ranked:eu"); err != nil || e != 2 {
			t.Fatalf("epoch = %d, %v; want 2", e, err)
		}
		if err := ls.SetLeaseEpoch(ctx, "ranked:eu", 1); !errors.Is(err, matcher.ErrStaleEpoch) {
			t.Fatalf("moving the epoch back = %v, want ErrStaleEpoch", err)
		}
		if err := ls.SetLeaseEpoch(ctx, "ranked:eu", 0); err == nil {
			t.Fatal("epoch 0 accepted")
		}
		if _, err := commitMatch(ctx, l, m, 1); !errors.Is(err, matcher.ErrStaleEpoch) {
			t.Fatalf("commit with epoch 1 = %v, want ErrStaleEpoch", err)
		}
		// Another partition's lease does not count.
		if err := ls.SetLeaseEpoch(ctx, "ranked:us", 7); err != nil {
			t.Fatal(err)
		}
		if _, err := commitMatch(ctx, l, m, 7); !errors.Is(err, matcher.ErrStaleEpoch) {
			t.Fatalf("commit with another partition's epoch = %v, want ErrStaleEpoch", err)
		}
		waitingIs(t, l, part("ranked", "eu"), a, b)
		if _, err := l.Match(ctx, m.ID); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("match after stale commit: %v, want ErrNotFound", err)
		}
		if n := len(drainAll(t, l)); n != 0 {
			t.Fatalf("stale commits wrote %d events", n)
		}

		if _, err := commitMatch(ctx, l, m, 2); err != nil {
			t.Fatalf("commit with the current epoch: %v", err)
		}
		waitingIs(t, l, part("ranked", "eu"))
		// The epoch only grows: the same token from another acquisition
		// (a Redis that lost its fencing counter) is refused, and the
		// owner of epoch 2 still commits.
		if err := ls.SetLeaseEpoch(ctx, "ranked:eu", 2); !errors.Is(err, matcher.ErrStaleEpoch) {
			t.Fatalf("recording the current epoch again = %v, want ErrStaleEpoch", err)
		}
		if e, err := l.LeaseEpoch(ctx, "ranked:eu"); err != nil || e != 2 {
			t.Fatalf("epoch after a refused equal one = %d, %v; want 2", e, err)
		}
		if err := ls.SetLeaseEpoch(ctx, "ranked:eu", 3); err != nil {
			t.Fatalf("a greater epoch: %v", err)
		}
	})

	t.Run("CommitMatches", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		var tk []matcher.Ticket
		for i := range 6 {
			tk = append(tk, mustCreate(t, l, ticketFor(fmt.Sprint("b", i), "ranked", "eu", t0.Add(time.Duration(i)*time.Second))))
		}
		if rs, err := l.CommitMatches(ctx, nil, 0); err != nil || len(rs) != 0 {
			t.Fatalf("empty batch = %v, %v", rs, err)
		}
		// The second match wants a ticket the first takes: it alone falls
		// short, and the matches on either side of it are written.
		batch := []matcher.Match{
			matchOf(t0.Add(time.Minute), tk[0], tk[1]),
			matchOf(t0.Add(time.Minute), tk[1], tk[2]),
			matchOf(t0.Add(time.Minute), tk[3], tk[4]),
		}
		rs, err := l.CommitMatches(ctx, batch, 0)
		if err != nil || len(rs) != 3 {
			t.Fatalf("commit batch = %v, %v", rs, err)
		}
		var sf *matcher.ShortfallError
		if !errors.As(rs[1].Err, &sf) || !slices.Equal(sf.Waiting, []string{tk[2].ID}) || rs[1].Events != nil {
			t.Fatalf("second match = %+v, want a shortfall with %s still waiting", rs[1], tk[2].ID)
		}
		for _, i := range []int{0, 2} {
			if rs[i].Err != nil || len(rs[i].Events) != 1 || rs[i].Events[0].ID == 0 ||
				!slices.Equal(rs[i].Events[0].Users, []string{batch[i].Players[0].UserID, batch[i].Players[1].UserID}) {
				t.Fatalf("match %d = %+v, want committed with one match.found", i, rs[i])
			}
			for _, p := range batch[i].Players {
				if got, _ := l.Ticket(ctx, p.TicketID); got.Status != matcher.StatusMatched || got.MatchID != batch[i].ID {
					t.Fatalf("ticket %s = %s in %q, want MATCHED in %s", p.TicketID, got.Status, got.MatchID, batch[i].ID)
				}
			}
		}
		if _, err := l.Match(ctx, batch[1].ID); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("short match: %v, want ErrNotFound", err)
		}
		waitingIs(t, l, part("ranked", "eu"), tk[2], tk[5])
		if n := len(drainAll(t, l)); n != 2 {
			t.Fatalf("batch wrote %d events, want 2", n)
		}

		// No ticket shared: one with a cancelled ticket falls short, the
		// other is written.
		c0 := mustCreate(t, l, ticketFor("c0", "ranked", "eu", t0))
		c1 := mustCreate(t, l, ticketFor("c1", "ranked", "eu", t0))
		c2 := mustCreate(t, l, ticketFor("c2", "ranked", "eu", t0))
		c3 := mustCreate(t, l, ticketFor("c3", "ranked", "eu", t0))
		mustResolve(t, l, c1.ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(time.Minute))
		drainAll(t, l)
		rs, err = l.CommitMatches(ctx, []matcher.Match{matchOf(t0.Add(time.Minute), c0, c1), matchOf(t0.Add(time.Minute), c2, c3)}, 0)
		if err != nil || !errors.As(rs[0].Err, &sf) || !slices.Equal(sf.Waiting, []string{c0.ID}) ||
			rs[1].Err != nil || len(rs[1].Events) != 1 {
			t.Fatalf("batch with a cancelled seat = %+v, %v; want a shortfall (%s waiting) then a commit", rs, err, c0.ID)
		}
		waitingIs(t, l, part("ranked", "eu"), tk[2], tk[5], c0)
		if n := len(drainAll(t, l)); n != 1 {
			t.Fatalf("batch wrote %d events, want 1", n)
		}
		mustResolve(t, l, c0.ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(time.Minute))
		drainAll(t, l)

		// A retried batch succeeds and writes nothing more.
		rs, err = l.CommitMatches(ctx, []matcher.Match{batch[0], batch[2]}, 0)
		if err != nil || rs[0].Err != nil || rs[1].Err != nil || rs[0].Events != nil || rs[1].Events != nil {
			t.Fatalf("retried batch = %+v, %v; want success without events", rs, err)
		}

		// A reused match id fails the whole batch: the valid match before it
		// is not written either.
		reused := matchOf(t0.Add(time.Hour), tk[2], tk[5])
		reused.ID = batch[0].ID
		fresh := mustCreate(t, l, ticketFor("b6", "ranked", "eu", t0))
		other := mustCreate(t, l, ticketFor("b7", "ranked", "eu", t0))
		if _, err := l.CommitMatches(ctx, []matcher.Match{matchOf(t0.Add(time.Hour), fresh, other), reused}, 0); err == nil {
			t.Fatal("a batch reusing a match id was committed")
		}
		waitingIs(t, l, part("ranked", "eu"), tk[2], tk[5], fresh, other)
		if n := len(drainAll(t, l)); n != 0 {
			t.Fatalf("failed batch wrote %d events", n)
		}
		if _, err := l.CommitMatches(ctx, []matcher.Match{matchOf(t0), reused}, 0); err == nil {
			t.Fatal("a batch with an invalid match was committed")
		}

		// A stale epoch refuses every match of the batch.
		rs, err = l.CommitMatches(ctx, []matcher.Match{matchOf(t0.Add(time.Hour), fresh, other), matchOf(t0.Add(time.Hour), tk[2], tk[5])}, 9)
		if err != nil || !errors.Is(rs[0].Err, matcher.ErrStaleEpoch) || !errors.Is(rs[1].Err, matcher.ErrStaleEpoch) {
			t.Fatalf("stale batch = %+v, %v; want ErrStaleEpoch for each", rs, err)
		}
		waitingIs(t, l, part("ranked", "eu"), tk[2], tk[5], fresh, other)
	})

	t.Run("CrossedBatchesNeverDeadlock", func(t *testing.T) {
		// Two committers (a deposed owner and its successor) send batches
		// over the same tickets in opposite match order: each pair is
		// seated once, and neither batch fails.
		l, ctx := newLedger(t), context.Background()
		for round := range 100 {
			var pairs [][2]matcher.Ticket
			for i := range 4 {
				pairs = append(pairs, [2]matcher.Ticket{
					mustCreate(t, l, ticketFor(fmt.Sprintf("x%d-%d-a", round, i), "ranked", "eu", t0)),
					mustCreate(t, l, ticketFor(fmt.Sprintf("x%d-%d-b", round, i), "ranked", "eu", t0)),
				})
			}
			var fwd, rev []matcher.Match
			for i := range pairs {
				fwd = append(fwd, matchOf(t0, pairs[i][0], pairs[i][1]))
				j := len(pairs) - 1 - i
				rev = append(rev, matchOf(t0, pairs[j][1], pairs[j][0]))
			}
			var wg sync.WaitGroup
			results := make([][]matcher.CommitResult, 2)
			errs := make([]error, 2)
			for k, b := range [][]matcher.Match{fwd, rev} {
				wg.Go(func() { results[k], errs[k] = l.CommitMatches(ctx, b, 0) })
			}
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("round %d: %v / %v", round, errs[0], errs[1])
			}
			for i := range pairs {
				won := 0
				for _, r := range []matcher.CommitResult{results[0][i], results[1][len(pairs)-1-i]} {
					if r.Err == nil {
						won++
					}
				}
				if won != 1 {
					t.Fatalf("round %d pair %d: committed %d times", round, i, won)
				}
			}
		}
	})

	t.Run("UserState", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		old := mustCreate(t, l, ticketFor("olga", "ranked", "eu", t0))
		old = mustResolve(t, l, old.ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(time.Second))
		matched := mustCreate(t, l, ticketFor("olga", "ranked", "eu", t0.Add(2*time.Second)))
		partner := mustCreate(t, l, ticketFor("pete", "ranked", "eu", t0.Add(2*time.Second)))
		m := matchOf(t0.Add(3*time.Second), matched, partner)
		if _, err := commitMatch(ctx, l, m, 0); err != nil {
			t.Fatal(err)
		}
		matched, _ = l.Ticket(ctx, matched.ID)
		stored, _ := l.Match(ctx, m.ID)
		waiting := mustCreate(t, l, ticketFor("olga", "casual", "us", t0.Add(4*time.Second)))

		check := func(since time.Time, wantT []matcher.Ticket, wantM []matcher.Match) {
			t.Helper()
			page, err := l.UserState(ctx, "olga", since, 10)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, fmt.Sprintf("tickets since %s", since), page.Tickets, wantT)
			equal(t, fmt.Sprintf("matches since %s", since), page.Matches, wantM)
			if page.More {
				t.Errorf("since %s: More with %d tickets", since, len(page.Tickets))
			}
		}
		check(t0, []matcher.Ticket{old, matched, waiting}, []matcher.Match{stored})
		// `since` is inclusive, at microsecond precision.
		check(old.UpdatedAt.Add(999), []matcher.Ticket{old, matched, waiting}, []matcher.Match{stored})
		check(old.UpdatedAt.Add(time.Microsecond), []matcher.Ticket{matched, waiting}, []matcher.Match{stored})
		check(t0.Add(time.Hour), []matcher.Ticket{waiting}, nil)

		page, err := l.UserState(ctx, "nobody", t0, 10)
		if err != nil || page.Tickets != nil || page.Matches != nil || page.More {
			t.Fatalf("unknown user = %+v, %v; want nothing", page, err)
		}
	})

	t.Run("UserStateIsBounded", func(t *testing.T) {
		// A user with a READY match and 30 cancels after it, three of them
		// at the same instant, and a waiting ticket: the catch-up holds the
		// live tickets and the newest resolved ones only, and says more
		// exist.
		l, ctx := newLedger(t), context.Background()
		matched := mustCreate(t, l, ticketFor("rita", "ranked", "eu", t0))
		partner := mustCreate(t, l, ticketFor("sam", "ranked", "eu", t0))
		m := matchOf(t0.Add(time.Second), matched, partner)
		if _, err := commitMatch(ctx, l, m, 0); err != nil {
			t.Fatal(err)
		}
		matched, _ = l.Ticket(ctx, matched.ID)
		stored, _ := l.Match(ctx, m.ID)
		var cancelled []matcher.Ticket // newest first
		for i := range 30 {
			at := t0.Add(time.Duration(10+i) * time.Second)
			if i >= 27 {
				at = t0.Add(37 * time.Second) // ties: the id orders them
			}
			tk := mustCreate(t, l, ticketFor("rita", "ranked", "eu", at.Add(-time.Second)))
			cancelled = append(cancelled, mustResolve(t, l, tk.ID, matcher.StatusCancelled, matcher.ReasonUser, at))
		}
		slices.SortFunc(cancelled, func(a, b matcher.Ticket) int {
			if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		waiting := mustCreate(t, l, ticketFor("rita", "casual", "us", t0.Add(time.Minute)))

		page, err := l.UserState(ctx, "rita", t0, 5)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]matcher.Ticket{matched, waiting}, cancelled[:5]...)
		slices.SortFunc(want, func(a, b matcher.Ticket) int {
			if c := a.EnqueuedAt.Compare(b.EnqueuedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		equal(t, "bounded catch-up", page.Tickets, want)
		equal(t, "its matches", page.Matches, []matcher.Match{stored})
		if !page.More || page.Next != (matcher.TicketCursor{At: cancelled[4].UpdatedAt, ID: cancelled[4].ID}) {
			t.Fatalf("More %v, Next %+v; want more from %+v", page.More, page.Next, cancelled[4])
		}

		// UserTickets pages on from Next with no gap and no repeat, ties
		// included, down to the match's ticket.
		all := append(slices.Clone(cancelled), matched)
		got := slices.Clone(cancelled[:5])
		cur := page.Next
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("paging does not end")
			}
			p, err := l.UserTickets(ctx, "rita", cur, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Tickets) > 4 {
				t.Fatalf("a page of %d tickets, limit 4", len(p.Tickets))
			}
			got = append(got, p.Tickets...)
			if !p.More {
				break
			}
			cur = p.Next
		}
		equal(t, "every resolved ticket, newest first", got, all)
		// From the zero cursor: the newest, with the match of a matched ticket.
		first, err := l.UserTickets(ctx, "rita", matcher.TicketCursor{}, 31)
		if err != nil || first.More || len(first.Tickets) != 31 {
			t.Fatalf("one page of all: %d tickets, more %v, %v", len(first.Tickets), first.More, err)
		}
		equal(t, "the page's matches", first.Matches, []matcher.Match{stored})
		if p, err := l.UserTickets(ctx, "nobody", matcher.TicketCursor{}, 10); err != nil || p.Tickets != nil || p.More {
			t.Fatalf("unknown user = %+v, %v", p, err)
		}
	})

	t.Run("WaitingPerPartition", func(t *testing.T) {
		l := newLedger(t)
		late := mustCreate(t, l, ticketFor("q1", "ranked", "eu", t0.Add(time.Minute)))
		early := mustCreate(t, l, ticketFor("q2", "ranked", "eu", t0))
		gone := mustCreate(t, l, ticketFor("q3", "ranked", "eu", t0))
		american := mustCreate(t, l, ticketFor("q4", "ranked", "us", t0))
		casual := mustCreate(t, l, ticketFor("q5", "casual", "eu", t0))
		mustResolve(t, l, gone.ID, matcher.StatusExpired, "", t0.Add(time.Hour))
		waitingIs(t, l, part("ranked", "eu"), early, late)
		waitingIs(t, l, part("ranked", "us"), american)
		waitingIs(t, l, part("casual", "eu"), casual)
		waitingIs(t, l, part("casual", "us"))
	})

	t.Run("DrainOutbox", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		var written []matcher.Event
		for i := range 3 {
			tk := mustCreate(t, l, ticketFor(fmt.Sprint("r", i), "ranked", "eu", t0))
			_, events, err := l.Resolve(ctx, tk.ID, matcher.StatusCancelled, matcher.ReasonUser, t0)
			if err != nil {
				t.Fatal(err)
			}
			written = append(written, events...)
		}
		if !slices.IsSortedFunc(written, func(a, b matcher.Event) int { return int(a.ID - b.ID) }) {
			t.Fatalf("event ids %v do not grow", eventIDs(written))
		}
		const all = -time.Hour // every event is older than that

		// Nothing is old enough yet.
		if n, err := l.DrainOutbox(ctx, time.Hour, 10, failIfCalled(t)); n != 0 || err != nil {
			t.Fatalf("drain of old events = %d, %v; want 0", n, err)
		}
		// A refused batch stays.
		boom := errors.New("redis down")
		n, err := l.DrainOutbox(ctx, all, 10, func([]matcher.Event) error { return boom })
		if n != 3 || !errors.Is(err, boom) {
			t.Fatalf("failed drain = %d, %v; want 3 and the callback's error", n, err)
		}
		// Oldest first, limited, byte for byte as written.
		var got []matcher.Event
		n, err = l.DrainOutbox(ctx, all, 2, func(events []matcher.Event) error {
			got = events
			return nil
		})
		if n != 2 || err != nil {
			t.Fatalf("drain = %d, %v; want 2", n, err)
		}
		for i, e := range got {
			w := written[i]
			if e.ID != w.ID || !bytes.Equal(protocol.Frame(e), protocol.Frame(w)) || !slices.Equal(e.Users, w.Users) || !e.CreatedAt.Equal(w.CreatedAt) {
				t.Fatalf("drained %+v, want %+v", e, w)
			}
			if e.CreatedAt.Location() != time.UTC || e.CreatedAt.Nanosecond()%1000 != 0 {
				t.Fatalf("created at %v, want UTC microseconds", e.CreatedAt)
			}
		}
		// Accepted events are gone; DeleteEvents removes the rest.
		if err := l.DeleteEvents(ctx, []int64{written[2].ID, 1 << 40}); err != nil {
			t.Fatal(err)
		}
		if err := l.DeleteEvents(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if n, err := l.DrainOutbox(ctx, all, 10, failIfCalled(t)); n != 0 || err != nil {
			t.Fatalf("drain of an empty outbox = %d, %v", n, err)
		}
	})

	t.Run("ConcurrentDrainsNeverShare", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		const events = 120
		want := make(map[int64]bool)
		for i := range events {
			tk := mustCreate(t, l, ticketFor(fmt.Sprint("s", i), "ranked", "eu", t0))
			_, evs, err := l.Resolve(ctx, tk.ID, matcher.StatusCancelled, matcher.ReasonUser, t0)
			if err != nil {
				t.Fatal(err)
			}
			want[evs[0].ID] = true
		}
		var (
			mu   sync.Mutex
			seen = make(map[int64]int)
			wg   sync.WaitGroup
		)
		for range 6 {
			wg.Go(func() {
				for {
					n, err := l.DrainOutbox(ctx, -time.Hour, 7, func(evs []matcher.Event) error {
						mu.Lock()
						for _, e := range evs {
							seen[e.ID]++
						}
						mu.Unlock()
						time.Sleep(time.Millisecond) // hold the batch while the others drain
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		for id, n := range seen {
			if n != 1 || !want[id] {
				t.Errorf("event %d handed out %d times (written: %v)", id, n, want[id])
			}
		}
		if len(seen) != events {
			t.Errorf("drained %d events, want %d", len(seen), events)
		}
	})

	t.Run("RaceOfCommitsAndCancels", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		ls := l.(leaseSetter)
		if err := ls.SetLeaseEpoch(ctx, "ranked:eu", 3); err != nil {
			t.Fatal(err)
		}
		const players, workers = 24, 50
		var tickets []matcher.Ticket
		for i := range players {
			tickets = append(tickets, mustCreate(t, l, ticketFor(fmt.Sprint("p", i), "ranked", "eu", t0)))
		}
		var (
			mu        sync.Mutex
			winner    = make(map[string]string) // ticket → match that won it
			cancelled = make(map[string]int)
			committed = 0
			events    = 0
			wg        sync.WaitGroup
			start     = make(chan struct{})
		)
		for w := range workers {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			wg.Go(func() {
				<-start
				if w%4 == 0 { // a cancel
					tk := tickets[rng.IntN(players)]
					_, evs, err := l.Resolve(ctx, tk.ID, matcher.StatusCancelled, matcher.ReasonUser, t0.Add(time.Second))
					var nw *matcher.NotWaitingError
					switch {
					case err == nil:
						mu.Lock()
						cancelled[tk.ID]++
						events += len(evs)
						mu.Unlock()
					case errors.As(err, &nw):
						if nw.Ticket.Status == matcher.StatusWaiting {
							t.Errorf("lost a cancel to a WAITING ticket %s", tk.ID)
						}
					default:
						t.Error(err)
					}
					return
				}
				k := 2 + rng.IntN(3)
				perm := rng.Perm(players)[:k]
				group := make([]matcher.Ticket, k)
				for i, p := range perm {
					group[i] = tickets[p]
				}
				m := matchOf(t0.Add(time.Second), group...)
				evs, err := commitMatch(ctx, l, m, 3)
				var sf *matcher.ShortfallError
				switch {
				case err == nil:
					mu.Lock()
					committed++
					events += len(evs)
					for _, p := range m.Players {
						if prev, ok := winner[p.TicketID]; ok {
							t.Errorf("ticket %s seated in %s and %s", p.TicketID, prev, m.ID)
						}
						winner[p.TicketID] = m.ID
					}
					mu.Unlock()
				case errors.As(err, &sf):
					if len(sf.Waiting) >= k {
						t.Errorf("shortfall with all %d tickets waiting", k)
					}
					for _, id := range sf.Waiting {
						if !slices.Contains(m.TicketIDs(), id) {
							t.Errorf("shortfall lists %s, not a seat of the match", id)
						}
					}
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()

		for _, tk := range tickets {
			got, err := l.Ticket(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			mid, inMatch := winner[tk.ID]
			n := cancelled[tk.ID]
			switch {
			case n > 1 || (n == 1 && inMatch):
				t.Errorf("ticket %s: %d cancels won, in match %q", tk.ID, n, mid)
			case inMatch && (got.Status != matcher.StatusMatched || got.MatchID != mid || got.Version != 2):
				t.Errorf("ticket %s won by %s is %+v", tk.ID, mid, got)
			case n == 1 && (got.Status != matcher.StatusCancelled || got.Version != 2):
				t.Errorf("cancelled ticket %s is %+v", tk.ID, got)
			case !inMatch && n == 0 && (got.Status != matcher.StatusWaiting || got.Version != 1):
				t.Errorf("untouched ticket %s is %+v", tk.ID, got)
			}
		}
		if drained := len(drainAll(t, l)); drained != events || events != committed+len(cancelled) {
			t.Errorf("outbox holds %d events; %d commits and %d cancels won", drained, committed, len(cancelled))
		}
		if committed == 0 {
			t.Error("no commit won: the race tested nothing")
		}
		t.Logf("%d commits, %d cancels won", committed, len(cancelled))
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		in := ticketFor("quinn", "ranked", "eu", t0)
		in.Attributes = map[string]string{"mode": "duel"}
		got := mustCreate(t, l, in)
		in.Attributes["mode"] = "changed by the caller"
		got.Attributes["mode"] = "changed by the reader"
		read, _ := l.Ticket(ctx, got.ID)
		if read.Attributes["mode"] != "duel" {
			t.Fatalf("stored attributes changed to %q", read.Attributes["mode"])
		}
	})

	testAcceptWindow(t, newLedger)
	testOneLiveMatch(t, newLedger)
	testLivePartitions(t, newLedger)
	testProviderMatch(t, newLedger)

	t.Run("Ping", func(t *testing.T) {
		l := newLedger(t)
		if err := l.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := l.Ticket(ctx, uuid.NewString()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Ticket with a cancelled context = %v", err)
		}
	})
}

func ticketFor(user, queue, region string, enq time.Time) matcher.Ticket {
	return matcher.Ticket{
		ID: uuid.NewString(), UserID: user, Queue: queue, Region: region,
		Skill: 1500 + float64(len(user)), EnqueuedAt: enq, Deadline: enq.Add(5 * time.Minute),
	}
}

func matchOf(at time.Time, tickets ...matcher.Ticket) matcher.Match {
	m := matcher.Match{
		ID: uuid.NewString(), Queue: "ranked", Region: "eu", State: matcher.MatchReady,
		FormedBy: matcher.FormedFilled, CreatedAt: at,
	}
	if len(tickets) > 0 {
		m.Queue, m.Region = tickets[0].Queue, tickets[0].Region
	}
	for _, tk := range tickets {
		m.Players = append(m.Players, matcher.Player{TicketID: tk.ID, UserID: tk.UserID, Name: tk.Name, Skill: tk.Skill})
	}
	return m
}

// commitMatch commits one match, as the engine commits a pass of one.
func commitMatch(ctx context.Context, l matcher.Ledger, m matcher.Match, epoch int64) ([]matcher.Event, error) {
	rs, err := l.CommitMatches(ctx, []matcher.Match{m}, epoch)
	if err != nil {
		return nil, err
	}
	return rs[0].Events, rs[0].Err
}

func part(queue, region string) matcher.Partition {
	return matcher.Partition{Queue: queue, Region: region}
}

func mustCreate(tb testing.TB, l matcher.Ledger, t matcher.Ticket) matcher.Ticket {
	tb.Helper()
	got, err := l.CreateTicket(context.Background(), t)
	if err != nil {
		tb.Fatalf("create ticket: %v", err)
	}
	return got
}

func mustResolve(tb testing.TB, l matcher.Ledger, id string, s matcher.TicketStatus, reason string, at time.Time) matcher.Ticket {
	tb.Helper()
	got, _, err := l.Resolve(context.Background(), id, s, reason, at)
	if err != nil {
		tb.Fatalf("resolve: %v", err)
	}
	return got
}

// drainAll takes every event out of the outbox.
func drainAll(tb testing.TB, l matcher.Ledger) []matcher.Event {
	tb.Helper()
	var all []matcher.Event
	for {
		n, err := l.DrainOutbox(context.Background(), -time.Hour, 1000, func(events []matcher.Event) error {
			all = append(all, events...)
			return nil
		})
		if err != nil {
			tb.Fatalf("drain outbox: %v", err)
		}
		if n == 0 {
			return all
		}
	}
}

func failIfCalled(tb testing.TB) func([]matcher.Event) error {
	return func(events []matcher.Event) error {
		tb.Errorf("callback called with %d events", len(events))
		return nil
	}
}

func eventIDs(events []matcher.Event) []int64 {
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	return ids
}

func waitingIs(tb testing.TB, l matcher.Ledger, p matcher.Partition, want ...matcher.Ticket) {
	tb.Helper()
	got, err := l.Waiting(context.Background(), p)
	if err != nil {
		tb.Fatal(err)
	}
	if len(want) == 0 {
		want = nil
	}
	// The contract's order: wait order, ties by id.
	slices.SortFunc(want, func(a, b matcher.Ticket) int {
		if c := a.EnqueuedAt.Compare(b.EnqueuedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	equal(tb, "waiting in "+p.String(), got, want)
}

// equal compares deeply: both ledgers must return exactly the same values,
// down to nil versus empty and time zones.
func equal[T any](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
