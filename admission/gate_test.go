package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matchgate/matchgate/admission"
)

// admit makes user's place READY with token, as the admitter would.
func (r *room) admit(user, token string) {
	r.t.Helper()
	ctx := context.Background()
	p, err := r.rec.Place(ctx, r.q.Name, user)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.rec.Admit(ctx, r.q.Name, 1, []admission.Admit{{UserID: user, Seq: p.Seq, Token: token}}, r.clk.Now(), r.q.TokenTTL); err != nil {
		r.t.Fatal(err)
	}
}

// refusedAs fails unless err is the gate's refusal with status and a
// reason naming the queue.
func refusedAs(t *testing.T, what string, err error, status admission.Status) {
	t.Helper()
	var na *admission.NotAdmittedError
	if !errors.As(err, &na) || na.Status != status || na.Queue != "launch" || !strings.Contains(na.NotAdmitted(), "launch") {
		t.Fatalf("%s: %v, want a refusal of a place %q in launch", what, err, status)
	}
}

// The gate claims only a READY, unexpired token of the user's own place,
// once; consumed it is final, released it may be claimed again.
func TestGateClaimsTheUsersReadyTokenOnce(t *testing.T) {
	r := newRoom(t, 5)
	g := r.svc.Gate()
	ctx := context.Background()

	_, err := g.Claim(ctx, "launch", "ann")
	refusedAs(t, "not entered", err, "")
	r.enter(2) // u0000, u0001
	_, err = g.Claim(ctx, "launch", "u0000")
	refusedAs(t, "waiting", err, admission.StatusWaiting)

	r.admit("u0000", "tok-0")
	tok, err := g.Claim(ctx, "launch", "u0000")
	if err != nil || tok != "tok-0" || r.status("u0000") != admission.StatusClaimed {
		t.Fatalf("claim of a READY token: %q %v, place %s", tok, err, r.status("u0000"))
	}
	_, err = g.Claim(ctx, "launch", "u0000")
	refusedAs(t, "claimed twice", err, admission.StatusClaimed)
	// Another user's token is not the caller's.
	_, err = g.Claim(ctx, "launch", "u0001")
	refusedAs(t, "another user", err, admission.StatusWaiting)

	if err := g.Release(ctx, "launch", tok); err != nil || r.status("u0000") != admission.StatusReady {
		t.Fatalf("release: %v, place %s", err, r.status("u0000"))
	}
	if tok, err = g.Claim(ctx, "launch", "u0000"); err != nil || tok != "tok-0" {
		t.Fatalf("claim after a release: %q %v", tok, err)
	}
	if err := g.Consume(ctx, "launch", tok); err != nil || r.status("u0000") != admission.StatusConsumed {
		t.Fatalf("consume: %v, place %s", err, r.status("u0000"))
	}
	_, err = g.Claim(ctx, "launch", "u0000")
	refusedAs(t, "consumed", err, admission.StatusConsumed)
	if err := g.Release(ctx, "launch", tok); !errors.Is(err, admission.ErrNotClaimed) {
		t.Fatalf("release of a consumed token: %v", err)
	}

	// A token past its life is refused before the admitter expires it.
	r.admit("u0001", "tok-1")
	r.clk.advance(r.q.TokenTTL)
	_, err = g.Claim(ctx, "launch", "u0001")
	refusedAs(t, "expired", err, admission.StatusReady)
	if r.status("u0001") != admission.StatusReady {
		t.Fatalf("an expired token's claim changed its place: %s", r.status("u0001"))
	}

	if _, err := g.Claim(ctx, "surge", "u0001"); !errors.Is(err, admission.ErrUnknownQueue) {
		t.Fatalf("claim in an unknown queue: %v", err)
	}
}

// Every refusal tells the player what to do next, naming the queue.
func TestNotAdmittedSaysWhy(t *testing.T) {
	seen := map[string]admission.Status{}
	for _, st := range []admission.Status{"", admission.StatusWaiting, admission.StatusReady, admission.StatusClaimed,
		admission.StatusConsumed, admission.StatusExpired, admission.StatusLeft, admission.StatusAbandoned} {
		e := &admission.NotAdmittedError{Queue: "launch", Status: st}
		why := e.NotAdmitted()
		if !strings.Contains(why, "launch") || !strings.Contains(e.Error(), why) {
			t.Errorf("%q: %q (%v)", st, why, e)
		}
		seen[why] = st
	}
	if len(seen) < 5 {
		t.Errorf("%d distinct reasons for 8 states: %v", len(seen), seen)
	}
}
