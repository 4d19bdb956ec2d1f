package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/protocol"
)

// providerMatch is a provider queue's PENDING_ACCEPT match of requester's
// ticket, given to the user provider, with an accept window of 10 s from
// t0+1s (not committed).
func providerMatch(requester matcher.Ticket, provider string) matcher.Match {
	m := matchOf(t0.Add(time.Second), requester)
	by := m.CreatedAt.Add(10 * time.Second)
	m.State, m.AcceptBy = matcher.MatchPendingAccept, &by
	m.Server = &matcher.Server{Address: "10.0.0.9:7777", Session: m.ID}
	m.Provider = &matcher.ProviderSeat{UserID: provider, Score: 0.8125,
		Parts: map[string]float64{"specialty": 0.5, "rating": 0.3125, "tiny": 1e-7}}
	return m
}

// commitProvider commits providerMatch and returns it as stored.
func commitProvider(t *testing.T, l matcher.Ledger, requester matcher.Ticket, provider string) matcher.Match {
	t.Helper()
	ctx := context.Background()
	m := providerMatch(requester, provider)
	events, err := commitMatch(ctx, l, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	// match.found goes to the requester and the provider (who is pushed
	// the assignment), not as a player.
	if len(events) != 1 || !slices.Equal(events[0].Users, []string{requester.UserID, m.Provider.UserID}) {
		t.Fatalf("commit events = %+v, want one match.found for %s and the provider", events, requester.UserID)
	}
	stored, err := l.Match(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// testProviderMatch is the contract of a provider queue's match (one player,
// the requester, and a provider seat): its record, who accepts and declines
// it, and where its requester goes when it dissolves. Part of testLedger.
func testProviderMatch(t *testing.T, newLedger func(t *testing.T) matcher.Ledger) {
	t.Run("CommitAndReadBack", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
		in := providerMatch(req, "prov")
		events, err := commitMatch(ctx, l, in, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.CreatedAt, want.Version = us(in.CreatedAt), 1
		by := us(*in.AcceptBy)
		want.AcceptBy = &by
		want.Provider = &matcher.ProviderSeat{UserID: "prov", Score: 0.8125,
			Parts: map[string]float64{"specialty": 0.5, "rating": 0.3125, "tiny": 1e-7}}
		// The caller's seat is copied, not kept: changing it changes no record.
		in.Provider.Parts["specialty"], in.Provider.UserID = 9, "someone else"
		got, err := l.Match(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "read back", got, want)
		// Nor does changing what was read.
		got.Provider.Parts["rating"] = 7
		again, _ := l.Match(ctx, want.ID)
		equal(t, "read again", again, want)

		if len(events) != 1 || events[0].Kind != matcher.EventMatchFound || !slices.Equal(events[0].Users, []string{"req", "prov"}) {
			t.Fatalf("events = %+v", events)
		}
		frame := string(protocol.Frame(events[0]))
		if !strings.Contains(frame, `"provider":{"userId":"prov","score":0.8125,"parts":{"rating":0.3125,"specialty":0.5,"tiny":1e-7}}`) {
			t.Fatalf("match.found %s lacks the provider seat", frame)
		}
		// The outbox holds the seat too: its row renders the same frame.
		drained := drainAll(t, l)
		if len(drained) != 1 || !slices.Equal(drained[0].Users, []string{"req", "prov"}) || string(protocol.Frame(drained[0])) != frame {
			t.Fatalf("outbox = %+v", drained)
		}

		// Every read of matches carries it: the reconnect's and the history's.
		st, err := l.UserState(ctx, "req", time.Time{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "user state matches", st.Matches, []matcher.Match{want})
		page, err := l.UserTickets(ctx, "req", matcher.TicketCursor{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "user tickets matches", page.Matches, []matcher.Match{want})
		pending, err := l.Pending(ctx, part("tutor", "eu"))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "pending", pending, []matcher.Match{want})
		// The provider is not seated: it has no ticket and no state.
		if st, _ := l.UserState(ctx, "prov", time.Time{}, 10); len(st.Tickets) != 0 || len(st.Matches) != 0 {
			t.Fatalf("provider's state = %+v", st)
		}
	})

	t.Run("NoPartsReadBackAsNil", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
		m := providerMatch(req, "prov")
		m.Provider.Parts = map[string]float64{}
		if _, err := commitMatch(ctx, l, m, 0); err != nil {
			t.Fatal(err)
		}
		got, _ := l.Match(ctx, m.ID)
		if got.Provider == nil || got.Provider.Parts != nil || got.Provider.UserID != "prov" {
			t.Fatalf("provider read back as %+v", got.Provider)
		}
		// A match without a provider reads back without one.
		a := mustCreate(t, l, ticketFor("al", "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor("bea", "ranked", "eu", t0))
		if plain := pendingMatch(t, l, a, b); plain.Provider != nil {
			t.Fatalf("a plain match read back with provider %+v", plain.Provider)
		}
	})

	t.Run("CommitRefusesBadSeats", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
		other := mustCreate(t, l, ticketFor("oth", "tutor", "eu", t0))
		for name, change := range map[string]func(m *matcher.Match){
			"no user":       func(m *matcher.Match) { m.Provider.UserID = "" },
			"seated":        func(m *matcher.Match) { m.Provider.UserID = "req" },
			"NaN score":     func(m *matcher.Match) { m.Provider.Score = math.NaN() },
			"infinite part": func(m *matcher.Match) { m.Provider.Parts["rating"] = math.Inf(-1) },
			"two players": func(m *matcher.Match) {
				m.Players = append(m.Players, matcher.Player{TicketID: other.ID, UserID: other.UserID, Skill: other.Skill})
			},
		} {
			m := providerMatch(req, "prov")
			change(&m)
			if rs, err := l.CommitMatches(ctx, []matcher.Match{m}, 0); err == nil {
				t.Errorf("%s: committed %+v", name, rs)
			}
		}
		waitingIs(t, l, part("tutor", "eu"), req, other)
		if events := drainAll(t, l); len(events) != 0 {
			t.Fatalf("refused commits wrote %+v", events)
		}
	})

	t.Run("CommitRetryAndBatches", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
		a := mustCreate(t, l, ticketFor("al", "tutor", "eu", t0))
		b := mustCreate(t, l, ticketFor("bea", "tutor", "eu", t0))
		pm := providerMatch(req, "prov")
		plain := matchOf(t0.Add(time.Second), a, b)
		gone := mustCreate(t, l, ticketFor("gone", "tutor", "eu", t0))
		short := providerMatch(gone, "prov-2")
		mustResolve(t, l, gone.ID, matcher.StatusCancelled, matcher.ReasonUser, t0)
		drainAll(t, l)
		// One batch: a provider match, a plain one and a provider match
		// whose requester left (shortfall: neither it nor its seat written).
		rs, err := l.CommitMatches(ctx, []matcher.Match{pm, plain, short}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var sf *matcher.ShortfallError
		if rs[0].Err != nil || len(rs[0].Events) != 1 || rs[1].Err != nil || len(rs[1].Events) != 1 || !errors.As(rs[2].Err, &sf) {
			t.Fatalf("results = %+v", rs)
		}
		if _, err := l.Match(ctx, short.ID); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("the shortfall's match = %v, want ErrNotFound", err)
		}
		stored, _ := l.Match(ctx, pm.ID)
		if p, _ := l.Match(ctx, plain.ID); p.Provider != nil || stored.Provider == nil || stored.Provider.UserID != "prov" {
			t.Fatalf("stored seats: provider match %+v, plain %+v", stored.Provider, p.Provider)
		}
		if n := len(drainAll(t, l)); n != 2 {
			t.Fatalf("%d events after the batch, want 2 match.found", n)
		}

		// A retry of the batch whose reply was lost: committed again,
		// nothing written again (no second match.found, the seat as it was).
		for range 2 {
			rs, err = l.CommitMatches(ctx, []matcher.Match{pm, plain}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rs[0].Err != nil || rs[0].Events != nil || rs[1].Err != nil || rs[1].Events != nil {
				t.Fatalf("retry results = %+v", rs)
			}
			again, _ := l.Match(ctx, pm.ID)
			equal(t, "after the retry", again, stored)
			if events := drainAll(t, l); len(events) != 0 {
				t.Fatalf("the retry wrote %+v", events)
			}
		}
		// A retry with the seat alone in its batch, on the same footing.
		rs, err = l.CommitMatches(ctx, []matcher.Match{pm}, 0)
		if err != nil || rs[0].Err != nil || rs[0].Events != nil {
			t.Fatalf("single retry = %+v, %v", rs, err)
		}
		// A reused id is refused and writes nothing, provider or not.
		fresh := mustCreate(t, l, ticketFor("fresh", "tutor", "eu", t0))
		drainAll(t, l)
		reused := providerMatch(fresh, "prov-3")
		reused.ID = pm.ID
		if _, err := l.CommitMatches(ctx, []matcher.Match{reused}, 0); err == nil {
			t.Fatal("a reused match id was committed")
		}
		if got, _ := l.Match(ctx, pm.ID); !(got.Provider != nil && got.Provider.UserID == "prov") {
			t.Fatalf("the reused id changed the seat: %+v", got.Provider)
		}
		if r, _ := l.Ticket(ctx, fresh.ID); r.Status != matcher.StatusWaiting {
			t.Fatalf("ticket of the refused commit is %s", r.Status)
		}
		if events := drainAll(t, l); len(events) != 0 {
			t.Fatalf("the refused commit wrote %+v", events)
		}
	})

	t.Run("ProviderAcceptMakesReady", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
		m := commitProvider(t, l, req, "prov")
		drainAll(t, l)
		// The requester asked for the match: it is not theirs to accept.
		for _, u := range []string{"req", "stranger", ""} {
			if _, _, err := l.Accept(ctx, m.ID, u, t0.Add(2*time.Second)); !errors.Is(err, matcher.ErrNotFound) {
				t.Fatalf("accept by %q = %v, want ErrNotFound", u, err)
			}
		}
		if read, _ := l.Match(ctx, m.ID); read.Version != m.Version || read.Accepted != nil {
			t.Fatalf("a refused accept changed the match: %+v", read)
		}
		got, events, err := l.Accept(ctx, m.ID, "prov", t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		want := m
		want.State, want.Accepted, want.Version = matcher.MatchReady, []string{"prov"}, m.Version+1
		equal(t, "accepted", got, want)
		read, _ := l.Match(ctx, m.ID)
		equal(t, "read back", read, want)
		if len(events) != 1 || events[0].Kind != matcher.EventMatchReady || !slices.Equal(events[0].Users, []string{"req", "prov"}) ||
			!bytes.Equal(protocol.Frame(events[0]), protocol.Frame(matcher.MatchReadyEvent(want))) {
			t.Fatalf("events = %+v, want one match.ready for the requester", events)
		}
		if drained := drainAll(t, l); len(drained) != 1 || !bytes.Equal(protocol.Frame(drained[0]), protocol.Frame(events[0])) {
			t.Fatalf("outbox = %+v", drained)
		}
		if r, _ := l.Ticket(ctx, req.ID); r.Status != matcher.StatusMatched || r.MatchID != m.ID {
			t.Fatalf("requester's ticket is %s/%s", r.Status, r.MatchID)
		}
		// READY now: a second accept is refused with its state.
		var se *matcher.MatchStateError
		if _, _, err := l.Accept(ctx, m.ID, "prov", t0.Add(3*time.Second)); !errors.As(err, &se) || se.Match.State != matcher.MatchReady {
			t.Fatalf("accepting a READY match = %v", err)
		}
	})

	t.Run("ProviderAcceptAfterWindow", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		m := commitProvider(t, l, mustCreate(t, l, ticketFor("req", "tutor", "eu", t0)), "prov")
		var se *matcher.MatchStateError
		if _, _, err := l.Accept(ctx, m.ID, "prov", *m.AcceptBy); !errors.As(err, &se) || se.Match.State != matcher.MatchPendingAccept {
			t.Fatalf("accept at the deadline = %v, want MatchStateError", err)
		}
	})

	// The requester goes back to WAITING with their enqueue time, head
	// start and deadline, whether the provider declined or was silent.
	for _, c := range []struct {
		name     string
		decliner string
		reason   string
	}{{"ProviderDeclines", "prov", matcher.ReasonDeclined}, {"ProviderSilent", "", matcher.ReasonAcceptTimeout}} {
		t.Run(c.name, func(t *testing.T) {
			l, ctx := newLedger(t), context.Background()
			in := ticketFor("req", "tutor", "eu", t0)
			in.HeadStart = 2 * time.Second
			req := mustCreate(t, l, in)
			m := commitProvider(t, l, req, "prov")
			drainAll(t, l)
			at := t0.Add(3 * time.Second)
			if c.decliner == "" {
				at = *m.AcceptBy
			}
			d, events, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: c.decliner, At: at})
			if err != nil {
				t.Fatal(err)
			}
			wantMatch := m
			wantMatch.State, wantMatch.Version = matcher.MatchDissolved, m.Version+1
			equal(t, "dissolved", d.Match, wantMatch)
			read, _ := l.Match(ctx, m.ID)
			equal(t, "match read back", read, wantMatch)
			back := req
			back.UpdatedAt, back.Version = us(at), req.Version+2
			equal(t, "requeued", d.Requeued, []matcher.Ticket{back})
			if d.Cancelled != nil {
				t.Fatalf("cancelled %+v", d.Cancelled)
			}
			if r, _ := l.Ticket(ctx, req.ID); !(r.EnqueuedAt.Equal(req.EnqueuedAt) && r.Deadline.Equal(req.Deadline) &&
				r.HeadStart == 2*time.Second && r.Status == matcher.StatusWaiting && r.MatchID == "") {
				t.Fatalf("requester's ticket read back as %+v", r)
			}
			waitingIs(t, l, part("tutor", "eu"), back)
			if len(events) != 2 || !slices.Equal(events[0].Users, []string{"req", "prov"}) ||
				!bytes.Equal(protocol.Frame(events[0]), protocol.Frame(matcher.MatchDissolvedEvent(wantMatch, c.reason))) ||
				!bytes.Equal(protocol.Frame(events[1]), protocol.Frame(matcher.TicketUpdatedEvent(back))) {
				t.Fatalf("events = %+v", events)
			}
			if n := len(drainAll(t, l)); n != 2 {
				t.Fatalf("%d events in the outbox, want 2", n)
			}
		})
	}

	t.Run("DeclineRefusals", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
		m := commitProvider(t, l, req, "prov")
		for _, u := range []string{"req", "stranger"} {
			if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: u, At: t0.Add(2 * time.Second)}); !errors.Is(err, matcher.ErrNotFound) {
				t.Fatalf("decline by %q = %v, want ErrNotFound", u, err)
			}
		}
		var se *matcher.MatchStateError
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "prov", At: *m.AcceptBy}); !errors.As(err, &se) {
			t.Fatalf("decline at the deadline = %v, want MatchStateError", err)
		}
		if _, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, At: m.AcceptBy.Add(-time.Microsecond)}); !errors.As(err, &se) {
			t.Fatalf("timeout inside the window = %v, want MatchStateError", err)
		}
		if read, _ := l.Match(ctx, m.ID); read.State != matcher.MatchPendingAccept || read.Version != m.Version {
			t.Fatalf("refused dissolves changed the match: %+v", read)
		}
		if r, _ := l.Ticket(ctx, req.ID); r.Status != matcher.StatusMatched {
			t.Fatalf("requester's ticket is %s", r.Status)
		}
	})

	t.Run("RaceOfCommitsAcceptsAndDeclines", func(t *testing.T) {
		// Each round commits one provider match twice at once (a retry
		// racing the commit whose reply was lost), then its provider
		// accepts and declines at once while its requester tries to accept:
		// one match.found only, exactly one of the provider's answers
		// wins, the requester's never does, and the ticket agrees.
		l, ctx := newLedger(t), context.Background()
		const rounds = 1000
		var ready, dissolved int
		for i := range rounds {
			req := mustCreate(t, l, ticketFor(fmt.Sprint("req", i), "tutor", "eu", t0))
			m := providerMatch(req, "prov")
			var (
				wg      sync.WaitGroup
				results [2][]matcher.CommitResult
				errs    [2]error
			)
			for j := range 2 {
				wg.Go(func() { results[j], errs[j] = l.CommitMatches(ctx, []matcher.Match{m}, 0) })
			}
			wg.Wait()
			found := 0
			for j := range 2 {
				if errs[j] != nil || results[j][0].Err != nil {
					t.Fatalf("round %d: commit %d = %+v, %v", i, j, results[j], errs[j])
				}
				found += len(results[j][0].Events)
			}
			if found != 1 {
				t.Fatalf("round %d: %d match.found from two commits of one match", i, found)
			}
			var acceptErr, declineErr, reqErr error
			wg.Go(func() { _, _, acceptErr = l.Accept(ctx, m.ID, "prov", t0.Add(2*time.Second)) })
			wg.Go(func() {
				_, _, declineErr = l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "prov", At: t0.Add(2 * time.Second)})
			})
			wg.Go(func() { _, _, reqErr = l.Accept(ctx, m.ID, req.UserID, t0.Add(2*time.Second)) })
			wg.Wait()
			if !errors.Is(reqErr, matcher.ErrNotFound) {
				t.Fatalf("round %d: the requester's accept = %v", i, reqErr)
			}
			if (acceptErr == nil) == (declineErr == nil) {
				t.Fatalf("round %d: accept %v, decline %v: want exactly one to win", i, acceptErr, declineErr)
			}
			final, _ := l.Match(ctx, m.ID)
			r, _ := l.Ticket(ctx, req.ID)
			switch {
			case acceptErr == nil && final.State == matcher.MatchReady && r.Status == matcher.StatusMatched && r.MatchID == m.ID:
				ready++
			case declineErr == nil && final.State == matcher.MatchDissolved && r.Status == matcher.StatusWaiting && r.MatchID == "":
				dissolved++
			default:
				t.Fatalf("round %d: match %s, ticket %s/%s (accept %v, decline %v)", i, final.State, r.Status, r.MatchID, acceptErr, declineErr)
			}
			if final.Provider == nil || final.Provider.UserID != "prov" {
				t.Fatalf("round %d: seat %+v", i, final.Provider)
			}
		}
		if ready+dissolved != rounds {
			t.Fatalf("%d READY and %d DISSOLVED of %d rounds", ready, dissolved, rounds)
		}
		t.Logf("%d READY, %d DISSOLVED", ready, dissolved)
		// Per round: one match.found, then match.ready, or match.dissolved
		// and a ticket.update; all to the requester alone.
		events := drainAll(t, l)
		if want := rounds + ready + 2*dissolved; len(events) != want {
			t.Fatalf("%d events, want %d", len(events), want)
		}
		for _, e := range events {
			// The match events go to the provider too; ticket updates to
			// the requester alone.
			if !strings.HasPrefix(e.Users[0], "req") || len(e.Users) != map[bool]int{true: 1, false: 2}[e.Kind == matcher.EventTicketUpdated] {
				t.Fatalf("event %d for %v", e.Kind, e.Users)
			}
		}
	})

	t.Run("RequesterCannotJoinElsewhere", func(t *testing.T) {
		l, ctx := newLedger(t), context.Background()
		req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
		m := commitProvider(t, l, req, "prov")
		// Seated in a pending match, the requester may not join elsewhere
		// (one live match a user), so the dissolve finds nothing in the way.
		var am *matcher.AlreadyMatchedError
		if _, err := l.CreateTicket(ctx, ticketFor("req", "ranked", "eu", t0.Add(time.Second))); !errors.As(err, &am) || am.MatchID != m.ID {
			t.Fatalf("join while in a provider match = %v", err)
		}
		d, _, err := l.Dissolve(ctx, matcher.DissolveRequest{MatchID: m.ID, Decliner: "prov", At: t0.Add(2 * time.Second)})
		if err != nil || len(d.Requeued) != 1 {
			t.Fatalf("dissolve = %+v, %v", d, err)
		}
	})
}

// On PostgreSQL a provider match and its seat are written in one round trip
// and one transaction: a seat that cannot be written takes its match, its
// tickets' moves and its event with it, and the connection it failed on is
// not handed out again in the failed transaction.
func TestPostgresProviderSeatWithItsMatchOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	var trips roundTrips
	pool := migratedPool(t, func(c *pgxpool.Config) { c.MaxConns, c.ConnConfig.Tracer = 1, &trips })
	l := ledger.NewPostgres(pool)

	req := mustCreate(t, l, ticketFor("req", "tutor", "eu", t0))
	before := trips.n.Load()
	m := providerMatch(req, "prov")
	if _, err := commitMatch(ctx, l, m, 0); err != nil {
		t.Fatal(err)
	}
	if n := trips.n.Load() - before; n != 1 {
		t.Errorf("a provider match took %d round trips to commit, want 1", n)
	}
	if got, _ := l.Match(ctx, m.ID); got.Provider == nil || got.Provider.UserID != "prov" {
		t.Fatalf("seat read back as %+v", got.Provider)
	}
	drainAll(t, l)

	// From now on no seat can be written.
	if _, err := pool.Exec(ctx, `ALTER TABLE matches ADD CONSTRAINT no_seat CHECK (provider IS NULL) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		other := mustCreate(t, l, ticketFor(fmt.Sprint("other", i), "tutor", "eu", t0))
		pm := providerMatch(other, "prov")
		if rs, err := l.CommitMatches(ctx, []matcher.Match{pm}, 0); err == nil {
			t.Fatalf("committed %+v though its seat could not be written", rs)
		}
		if _, err := l.Match(ctx, pm.ID); !errors.Is(err, matcher.ErrNotFound) {
			t.Fatalf("the match without its seat = %v, want ErrNotFound", err)
		}
		if r, _ := l.Ticket(ctx, other.ID); r.Status != matcher.StatusWaiting || r.Version != 1 {
			t.Fatalf("its ticket is %s v%d", r.Status, r.Version)
		}
		if events := drainAll(t, l); len(events) != 0 {
			t.Fatalf("the failed commit wrote %+v", events)
		}
		// The one connection serves the next call, as a plain commit.
		a := mustCreate(t, l, ticketFor(fmt.Sprint("a", i), "ranked", "eu", t0))
		b := mustCreate(t, l, ticketFor(fmt.Sprint("b", i), "ranked", "eu", t0))
		if _, err := commitMatch(ctx, l, matchOf(t0.Add(time.Second), a, b), 0); err != nil {
			t.Fatalf("plain commit after the failed one: %v", err)
		}
		drainAll(t, l)
	}
}
