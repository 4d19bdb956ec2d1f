package admission_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
)

// The supervisor runs real admitters on the real clock: what it is asked
// is checked by waiting for it, never by how long it took.

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSupervisorFollowsTheQueues(t *testing.T) {
	ctx := context.Background()
	rec, ln := record.NewMemory(), line.NewMemory()
	a := admission.Queue{Name: "alpha", Rate: 100}
	b := admission.Queue{Name: "beta", Rate: 100}
	svc, err := admission.NewService(admission.ServiceConfig{Queues: []admission.Queue{a, b}, Record: rec, Line: ln})
	if err != nil {
		t.Fatal(err)
	}
	sup, err := admission.NewSupervisor(admission.SupervisorConfig{Record: rec, Line: ln, Owner: "p1", LeaseTTL: 2 * time.Second, Tick: 10 * time.Millisecond},
		[]admission.Queue{a})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sup.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
	})

	admittedAll := func(queue string, users ...string) func() bool {
		return func() bool {
			for _, u := range users {
				if pos, err := svc.Position(ctx, queue, u); err != nil || pos.Status != admission.StatusReady {
					return false
				}
			}
			return true
		}
	}
	enter := func(queue string, n int) []string {
		var users []string
		for i := range n {
			u := fmt.Sprintf("%s-%d", queue, i)
			if _, _, err := svc.Enter(ctx, queue, u); err != nil {
				t.Fatal(err)
			}
			users = append(users, u)
		}
		return users
	}

	eventually(t, "alpha's admitter", func() bool { return slices.Equal(sup.Running(), []string{"alpha"}) })
	eventually(t, "alpha's waiters admitted", admittedAll("alpha", enter("alpha", 5)...))

	// beta is created: its admitter starts and admits.
	if err := sup.SetQueues([]admission.Queue{a, b}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "beta's admitter", func() bool { return slices.Equal(sup.Running(), []string{"alpha", "beta"}) })
	eventually(t, "beta's waiters admitted", admittedAll("beta", enter("beta", 5)...))

	// alpha is retired: its admitter stops and gives its lease up, so
	// another process takes it at once rather than after its life.
	if err := sup.SetQueues([]admission.Queue{b}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alpha's admitter stopped", func() bool { return slices.Equal(sup.Running(), []string{"beta"}) })
	if tok, err := ln.AcquireLease(ctx, "alpha", "p2", time.Now(), time.Second, 0); err != nil || tok == 0 {
		t.Fatalf("alpha's lease after its admitter stopped: token %d, %v", tok, err)
	}
	if _, _, err := svc.Enter(ctx, "alpha", "late"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // ten ticks: nobody of this process admits alpha
	if pos, err := svc.Position(ctx, "alpha", "late"); err != nil || pos.Status != admission.StatusWaiting {
		t.Fatalf("a waiter of a retired queue: %+v %v", pos, err)
	}

	// A set that does not normalize is refused.
	if err := sup.SetQueues([]admission.Queue{{Name: "beta"}}); err == nil {
		t.Fatal("a queue of rate 0 was accepted")
	}

	// Run returns when its context ends, every admitter stopped and its
	// lease given up.
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	done <- nil // for the cleanup
	if got := sup.Running(); len(got) != 0 {
		t.Fatalf("admitters still running: %v", got)
	}
	if tok, err := ln.AcquireLease(ctx, "beta", "p2", time.Now(), time.Second, 0); err != nil || tok == 0 {
		t.Fatalf("beta's lease after Run returned: token %d, %v", tok, err)
	}
}
