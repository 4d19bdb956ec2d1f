package admission_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
)

// These tests run the Service and the admitter on the memory record and
// line over a clock they step, so that every decision by time is theirs.

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type room struct {
	t   *testing.T
	q   admission.Queue
	clk *clock
	rec *record.Memory
	ln  *line.Memory
	svc *admission.Service
}

func newRoom(t *testing.T, rate int) *room {
	t.Helper()
	clk := &clock{now: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)}
	// Its waiters never poll: abandonAfter is out of these tests' reach.
	q := admission.Queue{Name: "launch", Rate: rate, TokenTTL: time.Minute, AbandonAfter: 24 * time.Hour}
	r := &room{t: t, q: q, clk: clk, rec: record.NewMemory(), ln: line.NewMemory()}
	svc, err := admission.NewService(admission.ServiceConfig{Queues: []admission.Queue{q}, Record: r.rec, Line: r.ln, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	return r
}

func (r *room) admitter(owner string) *admission.Admitter {
	r.t.Helper()
	a, err := admission.NewAdmitter(admission.AdmitterConfig{Queue: r.q, Record: r.rec, Line: r.ln, Owner: owner,
		LeaseTTL: 4 * time.Second, ProcessingGrace: time.Second, Now: r.clk.Now})
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}

func (r *room) enter(n int) []string {
	r.t.Helper()
	var users []string
	for i := range n {
		u := fmt.Sprintf("u%04d", i)
		if _, created, err := r.svc.Enter(context.Background(), r.q.Name, u); err != nil || !created {
			r.t.Fatalf("enter %s: created %v, %v", u, created, err)
		}
		users = append(users, u)
	}
	return users
}

// admittedOrder returns the admitted places by admission time, then seq.
func (r *room) admitted() []admission.Place {
	r.t.Helper()
	ps, err := r.rec.Admitted(context.Background(), r.q.Name, time.Time{}, 1<<20)
	if err != nil {
		r.t.Fatal(err)
	}
	return ps
}

func TestEntryIsIdempotentAndFIFO(t *testing.T) {
	r := newRoom(t, 50)
	ctx := context.Background()
	users := r.enter(20)
	pos, created, err := r.svc.Enter(ctx, r.q.Name, users[7])
	if err != nil || created || pos.Status != admission.StatusWaiting || pos.Rank != 7 || pos.Total != 20 {
		t.Fatalf("second entry: %+v created %v err %v, want rank 7 of 20, not created", pos, created, err)
	}
	got, err := r.svc.Position(ctx, r.q.Name, users[19])
	if err != nil || got.Rank != 19 || got.ETA.Seconds <= 0 {
		t.Fatalf("position %+v %v, want rank 19 with an ETA", got, err)
	}
	if none, err := r.svc.Position(ctx, r.q.Name, "stranger"); err != nil || none.Status != "" {
		t.Fatalf("position of a stranger %+v %v, want none", none, err)
	}
	if _, _, err := r.svc.Enter(ctx, "nope", "u"); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("enter an unknown queue: %v", err)
	}
}

// The rate is the queue's, in any one-second window, and admissions follow
// the entry order.
func TestAdmitsInOrderAtTheRate(t *testing.T) {
	const rate, users = 50, 400
	r := newRoom(t, rate)
	r.enter(users)
	a := r.admitter("a")
	ctx := context.Background()
	// 8,000 steps of 1.3 ms, about 10.4 s: instants finer than the line's
	// whole ms, which must not make takes a second apart by the line fall
	// within one second by the record.
	r.clk.advance(900 * time.Microsecond)
	for range 8000 {
		if _, err := a.Step(ctx); err != nil {
			t.Fatal(err)
		}
		r.clk.advance(time.Millisecond + 300*time.Microsecond)
	}
	ps := r.admitted()
	if len(ps) < 400 {
		// 10.4 s at 50/s admits about 500 of them: all 400.
		t.Fatalf("%d admitted, want all %d", len(ps), users)
	}
	checkWindows(t, ps, rate)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Seq < ps[j].Seq })
	for i := 1; i < len(ps); i++ {
		if ps[i].AdmittedAt.Before(ps[i-1].AdmittedAt) {
			t.Fatalf("seq %d admitted at %v, before seq %d at %v", ps[i].Seq, ps[i].AdmittedAt, ps[i-1].Seq, ps[i-1].AdmittedAt)
		}
		if ps[i].Token == "" || ps[i].Token == ps[i-1].Token {
			t.Fatalf("tokens %q and %q", ps[i-1].Token, ps[i].Token)
		}
	}
}

// checkWindows asserts no one-second window holds more than rate
// admissions.
func checkWindows(t *testing.T, ps []admission.Place, rate int) {
	t.Helper()
	at := make([]time.Time, 0, len(ps))
	for _, p := range ps {
		at = append(at, p.AdmittedAt)
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	for i := range at {
		j := i
		for j < len(at) && at[j].Sub(at[i]) < time.Second {
			j++
		}
		if j-i > rate {
			t.Fatalf("%d admissions within a second from %v, rate %d", j-i, at[i], rate)
		}
	}
}

// Admitters race for the lease; one admits, and killing it between take
// and token, or between token and acknowledgement, loses and duplicates
// nobody: the next owner settles what it left from the record.
func TestNobodyLostOrAdmittedTwiceWhenTheAdmitterDies(t *testing.T) {
	const users, rate = 300, 10
	r := newRoom(t, rate)
	r.enter(users)
	ctx := context.Background()
	kill := 0
	for round := 0; round < 400 && len(r.admitted()) < users; round++ {
		owner := fmt.Sprintf("a%d", round%3)
		a := r.admitter(owner)
		// A few honest steps, then the process dies at one of three points.
		for range 3 {
			if _, err := a.Step(ctx); err != nil {
				t.Fatal(err)
			}
			r.clk.advance(37 * time.Millisecond)
		}
		if a.Holding() {
			kill++
			// A second later (a fresh window: the steps used its
			// allowance) it takes waiters and dies on the way.
			r.clk.advance(1100 * time.Millisecond)
			token, _ := r.rec.Epoch(ctx, r.q.Name)
			taken, _, err := r.ln.Take(ctx, r.q.Name, token, 5, rate, r.clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			if kill%2 == 0 && len(taken) > 0 {
				// Died after writing the tokens, before acknowledging.
				var admits []admission.Admit
				for _, tk := range taken {
					admits = append(admits, admission.Admit{UserID: tk.UserID, Seq: tk.Seq, Token: fmt.Sprintf("dead-%d-%s", kill, tk.UserID)})
				}
				if _, err := r.rec.Admit(ctx, r.q.Name, token, admits, r.clk.Now(), time.Minute); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Its lease runs out; another process takes over.
		r.clk.advance(3000 * time.Millisecond)
	}
	if kill < 10 {
		t.Fatalf("only %d kills", kill)
	}
	ps := r.admitted()
	seen := map[string]bool{}
	tokens := map[string]bool{}
	for _, p := range ps {
		if seen[p.UserID] || tokens[p.Token] {
			t.Fatalf("%s admitted twice or token %s given twice", p.UserID, p.Token)
		}
		seen[p.UserID], tokens[p.Token] = true, true
	}
	if len(ps) != users {
		t.Fatalf("%d of %d admitted after %d kills", len(ps), users, kill)
	}
	dead := 0
	for _, p := range ps {
		if strings.HasPrefix(p.Token, "dead-") {
			dead++
		}
	}
	// Those the dead wrote tokens for keep them; those it only took were
	// put back and admitted by a later owner.
	if dead == 0 || dead == users {
		t.Fatalf("%d of %d hold a dead admitter's token: a kill path was not exercised", dead, users)
	}
	if n, _ := r.ln.Size(ctx, r.q.Name); n != 0 {
		t.Fatalf("%d left in the line", n)
	}
	checkWindows(t, ps, rate)
}

// A wiped line is rebuilt from the record, in the same order, by the next
// lease's first pass.
func TestTheLineIsRebuiltFromTheRecord(t *testing.T) {
	r := newRoom(t, 5)
	users := r.enter(30)
	ctx := context.Background()
	r.ln = line.NewMemory() // the line is lost
	a := r.admitter("a")
	if _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	rank, total, ok, err := r.ln.Rank(ctx, r.q.Name, users[20])
	if err != nil || !ok || total != 25 || rank != 15 {
		t.Fatalf("after the rebuild and a pass of 5: rank %d of %d (%v, %v), want 15 of 25", rank, total, ok, err)
	}
}

func TestTokensAuthorizeOneAction(t *testing.T) {
	r := newRoom(t, 50)
	ctx := context.Background()
	users := r.enter(2)
	a := r.admitter("a")
	if _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	pos, err := r.svc.Position(ctx, r.q.Name, users[0])
	if err != nil || pos.Status != admission.StatusReady || len(pos.Token) != 32 {
		t.Fatalf("position %+v %v, want READY with a 128-bit token", pos, err)
	}
	if p, err := r.svc.Claim(ctx, r.q.Name, pos.Token); err != nil || p.UserID != users[0] {
		t.Fatalf("claim: %+v %v", p, err)
	}
	if _, err := r.svc.Claim(ctx, r.q.Name, pos.Token); !errors.Is(err, admission.ErrAlreadyClaimed) {
		t.Fatalf("second claim: %v, want ALREADY_CLAIMED", err)
	}
	if _, err := r.svc.Release(ctx, r.q.Name, pos.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, err := r.svc.Claim(ctx, r.q.Name, pos.Token); err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	if _, err := r.svc.Consume(ctx, r.q.Name, pos.Token); err != nil {
		t.Fatalf("consume: %v", err)
	}
	if _, err := r.svc.Consume(ctx, r.q.Name, pos.Token); !errors.Is(err, admission.ErrNotClaimed) {
		t.Fatalf("second consume: %v, want NOT_CLAIMED", err)
	}
	// The other token expires unclaimed after its minute.
	other, _ := r.svc.Position(ctx, r.q.Name, users[1])
	r.clk.advance(61 * time.Second)
	if _, err := r.svc.Claim(ctx, r.q.Name, other.Token); !errors.Is(err, admission.ErrNotFound) {
		t.Fatalf("claim of an expired token: %v, want NOT_FOUND", err)
	}
}

// An admitter that ended a place in the record and died before taking it
// out of the line leaves the old entry; the user's new place, whose Add
// found the user in the line, is put back when the old entry is taken, and
// is admitted in its turn.
func TestANewPlaceBehindALeftoverEntryIsNotLost(t *testing.T) {
	r := newRoom(t, 10)
	ctx := context.Background()
	old, _, err := r.rec.Enter(ctx, r.q.Name, "u", r.clk.Now(), r.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ln.Add(ctx, r.q.Name, []admission.Place{old}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.rec.Abandon(ctx, r.q.Name, []string{"u"}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.clk.advance(time.Second)
	if _, _, err := r.svc.Enter(ctx, r.q.Name, "u"); err != nil {
		t.Fatal(err)
	}
	a := r.admitter("a")
	for range 20 {
		if _, err := a.Step(ctx); err != nil {
			t.Fatal(err)
		}
		r.clk.advance(200 * time.Millisecond)
	}
	if st := r.status("u"); st != admission.StatusReady {
		t.Fatalf("the new place is %s, want READY", st)
	}
}
