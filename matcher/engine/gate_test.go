package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// gatedQueues: ranked stands behind the admission queue launch, duel
// behind nothing.
func gatedQueues(t *testing.T) matcher.Config {
	t.Helper()
	c, err := matcher.ParseConfig([]byte(`queues:
  - {name: ranked, players: 2, admission: launch}
  - {name: duel, players: 2}
  - {name: launch, kind: admission, rate: 5, tokenTTL: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type gatedService struct {
	svc *engine.Service
	led matcher.Ledger
}

type gatedOptions struct {
	led    matcher.Ledger
	banned func(string) bool
}

func newGatedService(t *testing.T, gate engine.AdmissionGate, o gatedOptions) gatedService {
	t.Helper()
	if o.led == nil {
		o.led = ledger.NewMemory()
	}
	svc, err := engine.NewService(engine.ServiceConfig{
		Deps:      engine.Deps{Pool: pool.New(redistest.Mini(t), "mg"), Ledger: o.led, Now: func() time.Time { return t0 }},
		Queues:    gatedQueues(t),
		Admission: gate,
		Banned:    o.banned,
	})
	if err != nil {
		t.Fatal(err)
	}
	return gatedService{svc: svc, led: o.led}
}

func (g gatedService) join(queue, user string) (matcher.Ticket, error) {
	return g.svc.Join(context.Background(), matcher.JoinRequest{UserID: user, Queue: queue})
}

// waiting is the user's WAITING ticket in the record, if any.
func (g gatedService) waiting(t *testing.T, user string) (matcher.Ticket, bool) {
	t.Helper()
	page, err := g.led.UserState(context.Background(), user, t0.Add(-time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range page.Tickets {
		if tk.Status == matcher.StatusWaiting {
			return tk, true
		}
	}
	return matcher.Ticket{}, false
}

// fakeGate holds one READY token per user and records what the Service
// did with them.
type fakeGate struct {
	mu       sync.Mutex
	ready    map[string]string // user → token
	owner    map[string]string // token → user
	claimErr error
	claimed  []string
	consumed []string
	released []string
}

func newFakeGate(users ...string) *fakeGate {
	g := &fakeGate{ready: map[string]string{}, owner: map[string]string{}}
	for _, u := range users {
		g.ready[u], g.owner["tok-"+u] = "tok-"+u, u
	}
	return g
}

// noToken is the fake's refusal.
type noToken struct{}

func (noToken) Error() string       { return "no READY token" }
func (noToken) NotAdmitted() string { return "enter launch first" }

func (g *fakeGate) Claim(_ context.Context, queue, user string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if queue != "launch" {
		return "", fmt.Errorf("claim in %q, not launch", queue)
	}
	if g.claimErr != nil {
		return "", g.claimErr
	}
	tok, ok := g.ready[user]
	if !ok {
		return "", fmt.Errorf("claim for %s: %w", user, noToken{})
	}
	delete(g.ready, user)
	g.claimed = append(g.claimed, tok)
	return tok, nil
}

func (g *fakeGate) Consume(_ context.Context, queue, token string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.consumed = append(g.consumed, token)
	return nil
}

func (g *fakeGate) Release(_ context.Context, queue, token string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released = append(g.released, token)
	g.ready[g.owner[token]] = token
	return nil
}

// calls is what the gate was asked: claimed, consumed, released.
func (g *fakeGate) calls() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fmt.Sprintf("claimed %v consumed %v released %v", g.claimed, g.consumed, g.released)
}

func expectCalls(t *testing.T, what string, g *fakeGate, want string) {
	t.Helper()
	if got := g.calls(); got != want {
		t.Fatalf("%s: %s, want %s", what, got, want)
	}
}

// A join behind launch claims the user's token and consumes it once the
// ticket is recorded; a repeated join is told ALREADY_QUEUED with the
// ticket, and burns nothing.
func TestGatedJoinConsumesTheToken(t *testing.T) {
	gate := newFakeGate("ann")
	g := newGatedService(t, gate, gatedOptions{})
	tk, err := g.join("ranked", "ann")
	if err != nil || tk.Queue != "ranked" || tk.Status != matcher.StatusWaiting {
		t.Fatalf("join: %+v %v", tk, err)
	}
	expectCalls(t, "join", gate, "claimed [tok-ann] consumed [tok-ann] released []")

	again, err := g.join("ranked", "ann")
	if de := mustCode(t, "repeated join", err, matcher.CodeAlreadyQueued); de.TicketID != tk.ID || again.ID != tk.ID {
		t.Fatalf("repeated join: %+v, ticket %s, want %s", de, again.ID, tk.ID)
	}
	expectCalls(t, "repeated join", gate, "claimed [tok-ann] consumed [tok-ann] released []")

	// A queue behind nothing asks the gate nothing.
	if _, err := g.join("duel", "bob"); err != nil {
		t.Fatal(err)
	}
	expectCalls(t, "join of duel", gate, "claimed [tok-ann] consumed [tok-ann] released []")
}

// Without a token the join is refused ADMISSION_REQUIRED, naming the
// admission queue and why, and nothing is recorded.
func TestGatedJoinWithoutATokenIsRefused(t *testing.T) {
	gate := newFakeGate()
	g := newGatedService(t, gate, gatedOptions{})
	_, err := g.join("ranked", "bob")
	de := mustCode(t, "join without a token", err, matcher.CodeAdmissionRequired)
	if !strings.Contains(de.Message, "admission queue launch") || !strings.Contains(de.Message, "enter launch first") {
		t.Fatalf("message %q names neither launch nor why", de.Message)
	}
	if _, ok := g.waiting(t, "bob"); ok {
		t.Fatal("a refused join recorded a ticket")
	}
	expectCalls(t, "refused join", gate, "claimed [] consumed [] released []")
}

// A join the record refuses (the user waits in another queue) releases
// the token, which then admits the join once the user is free.
func TestGatedJoinRefusedByTheRecordReleasesTheToken(t *testing.T) {
	gate := newFakeGate("cat")
	g := newGatedService(t, gate, gatedOptions{})
	duel, err := g.join("duel", "cat")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.join("ranked", "cat")
	if de := mustCode(t, "join while waiting in duel", err, matcher.CodeAlreadyQueued); de.TicketID != duel.ID {
		t.Fatalf("told of ticket %s, want %s", de.TicketID, duel.ID)
	}
	expectCalls(t, "refused by the record", gate, "claimed [tok-cat] consumed [] released [tok-cat]")

	if _, err := g.svc.Cancel(context.Background(), "cat", duel.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.join("ranked", "cat"); err != nil {
		t.Fatalf("join with the released token: %v", err)
	}
	expectCalls(t, "join after the release", gate, "claimed [tok-cat tok-cat] consumed [tok-cat] released [tok-cat]")
}

// unknownLedger fails every CreateTicket as a lost connection would: the
// ticket may or may not have been written.
type unknownLedger struct{ matcher.Ledger }

func (unknownLedger) CreateTicket(context.Context, matcher.Ticket) (matcher.Ticket, error) {
	return matcher.Ticket{}, fmt.Errorf("insert ticket: %w", context.DeadlineExceeded)
}

// A join whose record answer is unknown keeps the token claimed: it may
// have been recorded, and a token admits one ticket at most.
func TestGatedJoinOfUnknownOutcomeKeepsTheTokenClaimed(t *testing.T) {
	gate := newFakeGate("dan")
	g := newGatedService(t, gate, gatedOptions{led: unknownLedger{ledger.NewMemory()}})
	_, err := g.join("ranked", "dan")
	mustCode(t, "join with the record unreachable", err, matcher.CodeUnavailable)
	expectCalls(t, "unknown outcome", gate, "claimed [tok-dan] consumed [] released []")
}

// A ticket recorded and then cancelled for a ban was the token's join.
func TestGatedJoinOfABannedUserConsumesTheToken(t *testing.T) {
	gate := newFakeGate("eve")
	g := newGatedService(t, gate, gatedOptions{banned: func(u string) bool { return u == "eve" }})
	_, err := g.join("ranked", "eve")
	mustCode(t, "join of a banned user", err, matcher.CodeForbidden)
	expectCalls(t, "banned", gate, "claimed [tok-eve] consumed [tok-eve] released []")
}

// A gate that fails is no refusal: UNAVAILABLE while it is unreachable,
// INTERNAL otherwise, and nothing is recorded.
func TestGatedJoinWhenTheGateFails(t *testing.T) {
	gate := newFakeGate("fay")
	g := newGatedService(t, gate, gatedOptions{})
	for _, c := range []struct {
		err  error
		code matcher.Code
	}{
		{fmt.Errorf("read place: %w", context.DeadlineExceeded), matcher.CodeUnavailable},
		{errors.New("corrupt place"), matcher.CodeInternal},
	} {
		gate.claimErr = c.err
		_, err := g.join("ranked", "fay")
		mustCode(t, c.err.Error(), err, c.code)
		if !errors.Is(err, c.err) {
			t.Fatalf("%v does not carry its cause %v", err, c.err)
		}
	}
	if _, ok := g.waiting(t, "fay"); ok {
		t.Fatal("a join whose gate failed recorded a ticket")
	}
}

// Without a gate, the queues behind an admission queue refuse every join,
// saying why; the others join.
func TestGatedJoinWithoutAGate(t *testing.T) {
	g := newGatedService(t, nil, gatedOptions{})
	_, err := g.join("ranked", "gus")
	if de := mustCode(t, "join without a gate", err, matcher.CodeAdmissionRequired); !strings.Contains(de.Message, "does not serve") {
		t.Fatalf("message %q", de.Message)
	}
	if _, err := g.join("duel", "gus"); err != nil {
		t.Fatal(err)
	}
}

// Two joins at once of one user holding one token, a thousand times on the
// real admission Service over the memory record: each time exactly one
// joins, the other is refused (ADMISSION_REQUIRED, or ALREADY_QUEUED when
// the winner's ticket is already recorded), and the token ends CONSUMED.
func TestGatedJoinRace(t *testing.T) {
	t.Run("memory", func(t *testing.T) { gatedJoinRace(t, record.NewMemory(), 1000) })
	t.Run("postgres", func(t *testing.T) {
		pgtest.Require(t)
		gatedJoinRace(t, record.NewPostgres(pgtest.New(t)), 200)
	})
}

func gatedJoinRace(t *testing.T, rec admission.Record, rounds int) {
	ctx := context.Background()
	adm, err := admission.NewService(admission.ServiceConfig{
		Queues: []admission.Queue{{Name: "launch", Rate: 5, TokenTTL: time.Minute}},
		Record: rec, Line: line.NewMemory(), Now: func() time.Time { return t0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	g := newGatedService(t, adm.Gate(), gatedOptions{})
	outcomes := map[string]int{}
	for i := range rounds {
		user := fmt.Sprintf("r%04d", i)
		p, _, err := rec.Enter(ctx, "launch", user, t0, t0)
		if err != nil {
			t.Fatal(err)
		}
		token := fmt.Sprintf("%032x", i+1)
		if _, err := rec.Admit(ctx, "launch", 1, []admission.Admit{{UserID: user, Seq: p.Seq, Token: token}}, t0, time.Minute); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for j := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[j] = g.join("ranked", user)
			}()
		}
		close(start)
		wg.Wait()
		joined := 0
		for _, err := range errs {
			switch code := codeOf(err); {
			case err == nil:
				joined++
				outcomes["joined"]++
			case code == matcher.CodeAdmissionRequired || code == matcher.CodeAlreadyQueued:
				outcomes[code.String()]++
			default:
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if joined != 1 {
			t.Fatalf("round %d: %d of two joins with one token joined (%v)", i, joined, errs)
		}
		if pl, err := rec.Place(ctx, "launch", user); err != nil || pl.Status != admission.StatusConsumed {
			t.Fatalf("round %d: token %+v %v, want CONSUMED", i, pl, err)
		}
		if _, ok := g.waiting(t, user); !ok {
			t.Fatalf("round %d: no waiting ticket", i)
		}
	}
	t.Logf("%d rounds: %v", rounds, outcomes)
	if outcomes["joined"] != rounds {
		t.Fatalf("outcomes %v", outcomes)
	}
}
