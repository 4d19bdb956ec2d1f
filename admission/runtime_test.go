package admission_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
)

// Queues changed at run time (the admin API), on the memory record and line
// over the stepped clock.

// steps runs n admitter steps of gap each.
func (r *room) steps(a *admission.Admitter, n int, gap time.Duration) {
	r.t.Helper()
	for range n {
		if _, err := a.Step(context.Background()); err != nil {
			r.t.Fatal(err)
		}
		r.clk.advance(gap)
	}
}

// since returns the places admitted at or after from.
func since(ps []admission.Place, from time.Time) []admission.Place {
	var out []admission.Place
	for _, p := range ps {
		if !p.AdmittedAt.Before(from) {
			out = append(out, p)
		}
	}
	return out
}

// busiestSecond is the most admissions of any one-second window.
func busiestSecond(ps []admission.Place) int {
	most := 0
	for _, p := range ps {
		n := 0
		for _, o := range ps {
			if d := o.AdmittedAt.Sub(p.AdmittedAt); d >= 0 && d < time.Second {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// A rate changed while the admitter runs is the next pass's: raised, the
// admitter uses it; lowered, no second holds more than it from then on,
// the admissions just before the change included. A changed token life is
// given to those admitted after the change.
func TestSetQueueChangesTheRateAtTheNextPass(t *testing.T) {
	r := newRoom(t, 2)
	r.enter(200)
	a := r.admitter("a")
	r.steps(a, 30, 100*time.Millisecond)
	slow := r.admitted()
	if len(slow) < 4 {
		t.Fatalf("%d admitted in 3 s at 2 a second", len(slow))
	}
	checkWindows(t, slow, 2)

	raisedAt := r.clk.Now()
	q := r.q
	q.Rate, q.TokenTTL = 10, 2*time.Minute
	if err := a.SetQueue(q); err != nil {
		t.Fatal(err)
	}
	r.steps(a, 30, 100*time.Millisecond)
	fast := since(r.admitted(), raisedAt)
	checkWindows(t, r.admitted(), 10)
	if busiestSecond(fast) <= 2 {
		t.Fatalf("after raising the rate to 10 the busiest second admitted %d", busiestSecond(fast))
	}
	for _, p := range fast {
		if got := p.ExpiresAt.Sub(p.AdmittedAt); got != 2*time.Minute {
			t.Fatalf("admitted after the change with a token life of %v, want 2m", got)
		}
	}

	loweredAt := r.clk.Now()
	q.Rate = 1
	if err := a.SetQueue(q); err != nil {
		t.Fatal(err)
	}
	r.steps(a, 40, 100*time.Millisecond)
	after := since(r.admitted(), loweredAt)
	if len(after) == 0 {
		t.Fatal("nobody admitted in 4 s at 1 a second")
	}
	// Each take counts the second before it, admissions at the old rate
	// included: those made after the change never exceed the new one in
	// any second.
	if n := busiestSecond(after); n > 1 {
		t.Fatalf("%d admitted within a second after lowering the rate to 1", n)
	}

	if err := a.SetQueue(admission.Queue{Name: "other", Rate: 5}); err == nil {
		t.Fatal("an admitter took another queue's name")
	}
	if err := a.SetQueue(admission.Queue{Name: r.q.Name}); err == nil {
		t.Fatal("an admitter took a rate of 0")
	}
}

// A queue created at run time takes entries at once; a retired one takes
// none, but serves what its record holds: a READY token is told and can be
// claimed and consumed until its life ends, a waiter is told its rank and
// no ETA (nobody admits it) and may leave; a name holding nothing for the
// caller is an unknown queue. Created again, the queue's admitter rebuilds
// the line and admits its waiters.
func TestServiceFollowsQueuesChangedAtRunTime(t *testing.T) {
	r := newRoom(t, 1)
	ctx := context.Background()
	flash := admission.Queue{Name: "flash", Rate: 50}
	if _, _, err := r.svc.Enter(ctx, flash.Name, "f1"); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("enter a queue not yet created: %v", err)
	}
	if err := r.svc.SetQueues([]admission.Queue{r.q, flash}); err != nil {
		t.Fatal(err)
	}
	if pos, created, err := r.svc.Enter(ctx, flash.Name, "f1"); err != nil || !created || pos.Status != admission.StatusWaiting {
		t.Fatalf("enter a queue created at run time: %+v %v %v", pos, created, err)
	}

	users := r.enter(4)
	a := r.admitter("a")
	r.steps(a, 1, 100*time.Millisecond) // admits users[0] at 1 a second
	ready, err := r.svc.Position(ctx, r.q.Name, users[0])
	if err != nil || ready.Status != admission.StatusReady {
		t.Fatalf("position of the first: %+v %v", ready, err)
	}

	// launch is retired.
	if err := r.svc.SetQueues([]admission.Queue{flash}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.svc.Enter(ctx, r.q.Name, "late"); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("enter a retired queue: %v", err)
	}
	if _, _, err := r.svc.Enter(ctx, r.q.Name, users[1]); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("enter again a retired queue: %v", err)
	}
	if pos, err := r.svc.Position(ctx, r.q.Name, users[0]); err != nil || pos.Status != admission.StatusReady || pos.Token != ready.Token {
		t.Fatalf("a READY place in a retired queue: %+v %v", pos, err)
	}
	waiting, err := r.svc.Position(ctx, r.q.Name, users[2])
	if err != nil || waiting.Status != admission.StatusWaiting || waiting.Rank != 1 || !math.IsInf(waiting.ETA.Seconds, 1) {
		t.Fatalf("a waiter of a retired queue: %+v %v, want rank 1 and no finite ETA", waiting, err)
	}
	if _, err := r.svc.Position(ctx, r.q.Name, "stranger"); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("position of a stranger in a retired queue: %v", err)
	}
	if _, err := r.svc.Claim(ctx, r.q.Name, ready.Token); err != nil {
		t.Fatalf("claim in a retired queue: %v", err)
	}
	if _, err := r.svc.Consume(ctx, r.q.Name, ready.Token); err != nil {
		t.Fatalf("consume in a retired queue: %v", err)
	}
	if _, err := r.svc.Claim(ctx, r.q.Name, "0123456789abcdef0123456789abcdef"); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("claim of no token in a retired queue: %v", err)
	}
	if _, err := r.svc.Claim(ctx, flash.Name, "0123456789abcdef0123456789abcdef"); !errors.Is(err, admission.ErrNotFound) {
		t.Fatalf("claim of no token in a queue in force: %v", err)
	}
	if err := r.svc.Leave(ctx, r.q.Name, users[3]); err != nil {
		t.Fatalf("leave a retired queue: %v", err)
	}
	if err := r.svc.Leave(ctx, r.q.Name, "stranger"); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("leave a retired queue without a place: %v", err)
	}
	if _, err := r.svc.Stats(ctx, r.q.Name); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("stats of a retired queue: %v", err)
	}
	if qs, err := r.svc.Queues(ctx); err != nil || len(qs) != 1 || qs[0].Queue.Name != flash.Name {
		t.Fatalf("queues in force: %+v %v", qs, err)
	}

	// A set that does not normalize is refused whole.
	if err := r.svc.SetQueues([]admission.Queue{{Name: r.q.Name}}); err == nil {
		t.Fatal("a queue of rate 0 was put in force")
	}
	if _, _, err := r.svc.Enter(ctx, flash.Name, "f2"); err != nil {
		t.Fatalf("the queues in force changed on a refused set: %v", err)
	}

	// Created again: a fresh admitter (another process's, after the
	// retired one stopped) admits the waiters left, in order.
	if err := r.svc.SetQueues([]admission.Queue{r.q, flash}); err != nil {
		t.Fatal(err)
	}
	r.clk.advance(5 * time.Second) // the first admitter's lease has run out
	b := r.admitter("b")
	r.steps(b, 35, 100*time.Millisecond)
	for _, u := range users[1:3] {
		if pos, err := r.svc.Position(ctx, r.q.Name, u); err != nil || pos.Status != admission.StatusReady {
			t.Fatalf("%s after the queue came back: %+v %v", u, pos, err)
		}
	}
}

// The figures of GET /v1/queues: the queue's settings in force, its line,
// the measured rate and the ETA's error over its admissions, measured at
// most once a second.
func TestQueuesFigures(t *testing.T) {
	r := newRoom(t, 5)
	ctx := context.Background()
	r.enter(40)
	a := r.admitter("a")
	r.steps(a, 40, 100*time.Millisecond) // 4 s at 5 a second
	admitted := len(r.admitted())
	qs, err := r.svc.Queues(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatalf("queues: %+v %v", qs, err)
	}
	st := qs[0]
	if st.Queue.Name != r.q.Name || st.Queue.Rate != 5 || st.Queue.AbandonAfter != r.q.AbandonAfter || st.Waiting != int64(40-admitted) {
		t.Fatalf("figures %+v, want %s at 5 a second (normalized) with %d waiting", st, r.q.Name, 40-admitted)
	}
	if !st.Rates.Measured || st.Rates.Mean <= 0 || st.Rates.Mean > 5.5 {
		t.Fatalf("measured rates %+v", st.Rates)
	}
	// Each entry was predicted at the configured 5 a second: the error is
	// measured over every admission.
	if st.ETAError.N != admitted || st.ETAError.P90 < st.ETAError.P50 || math.IsNaN(st.ETAError.P50) {
		t.Fatalf("ETA error %+v over %d admissions", st.ETAError, admitted)
	}

	// Within the second the figures are reused; the settings are not.
	r.steps(a, 1, 0)
	q := r.q
	q.Rate = 7
	if err := r.svc.SetQueues([]admission.Queue{q}); err != nil {
		t.Fatal(err)
	}
	again, _ := r.svc.Queues(ctx)
	if again[0].Waiting != st.Waiting || again[0].Queue.Rate != 7 {
		t.Fatalf("within the second: %+v, want waiting %d at rate 7", again[0], st.Waiting)
	}
	r.clk.advance(time.Second)
	later, _ := r.svc.Queues(ctx)
	if later[0].Waiting >= st.Waiting {
		t.Fatalf("a second later %d waiting, want fewer than %d", later[0].Waiting, st.Waiting)
	}
}
