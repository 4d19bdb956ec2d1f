package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/matcher"
)

// Every domain kind has a wire code of its own, every admission refusal a
// code, and every wire code names a kind or a refusal and has a status: a
// kind added to matcher without a code here would reach clients as
// INTERNAL.
func TestEveryKindHasItsOwnCode(t *testing.T) {
	seen := map[Code]string{}
	for _, k := range matcher.Codes() {
		w, ok := kindCode[k]
		if !ok {
			t.Errorf("kind %q has no wire code", k)
			continue
		}
		if prev, dup := seen[w]; dup {
			t.Errorf("%s and kind %q share the code %s", prev, k, w)
		}
		seen[w] = "kind " + k.String()
	}
	for _, a := range admissionCodes {
		if prev, dup := seen[a.code]; dup && a.code != CodeUnknownQueue && a.code != CodeNotFound {
			// Only the two an admission refusal shares with a join on
			// purpose (an unknown queue, an unknown id) may be shared.
			t.Errorf("%s and %v share the code %s", prev, a.err, a.code)
		}
		seen[a.code] = a.err.Error()
	}
	for _, c := range Codes() {
		if _, ok := seen[c]; !ok {
			t.Errorf("code %s names no kind and no admission refusal", c)
		}
		if _, ok := statusOf[c]; !ok {
			t.Errorf("code %s has no HTTP status", c)
		}
	}
	if len(seen) != len(Codes()) || len(kindCode) != len(matcher.Codes()) || len(statusOf) != len(Codes()) {
		t.Errorf("%d codes for %d kinds, %d listed, %d with a status", len(seen), len(matcher.Codes()), len(Codes()), len(statusOf))
	}
	if c, st := CodeOf(matcher.Code(250)); c != CodeInternal || st != http.StatusInternalServerError {
		t.Errorf("unknown kind: %s %d, want INTERNAL 500", c, st)
	}
	if st := StatusOf("NO_SUCH_CODE"); st != http.StatusInternalServerError {
		t.Errorf("unknown code: %d, want 500", st)
	}
	if !slices.Contains(Codes(), CodeInternal) {
		t.Error("INTERNAL is not listed")
	}
}

// The admission refusals are found through the context the service wraps
// them in; its other errors are no refusal.
func TestAdmissionCodeOf(t *testing.T) {
	for _, c := range []struct {
		err    error
		code   Code
		status int
	}{
		{fmt.Errorf("%w: %q", admission.ErrUnknownQueue, "drop"), CodeUnknownQueue, 400},
		{fmt.Errorf("claim: %w", admission.ErrNotFound), CodeNotFound, 404},
		{fmt.Errorf("claim: %w", admission.ErrAlreadyClaimed), CodeAlreadyClaimed, 409},
		{fmt.Errorf("consume: %w", admission.ErrNotClaimed), CodeNotClaimed, 409},
	} {
		code, status, ok := AdmissionCodeOf(c.err)
		if !ok || code != c.code || status != c.status {
			t.Errorf("%v: %s %d %v, want %s %d", c.err, code, status, ok, c.code, c.status)
		}
	}
	for _, err := range []error{admission.ErrStaleEpoch, admission.ErrFenced, errors.New("redis down"), nil,
		matcher.Errorf(matcher.CodeNotFound, "no such ticket")} {
		if code, _, ok := AdmissionCodeOf(err); ok {
			t.Errorf("%v is the refusal %s", err, code)
		}
	}
}

// A join refused for want of an admission token is 403, as FORBIDDEN, with
// a code of its own: the client's next step is to enter the admission
// queue, not to give up.
func TestAdmissionRequired(t *testing.T) {
	if c, st := CodeOf(matcher.CodeAdmissionRequired); c != CodeAdmissionRequired || st != http.StatusForbidden {
		t.Fatalf("CodeOf(admission required) = %s %d, want ADMISSION_REQUIRED 403", c, st)
	}
	if _, _, ok := AdmissionCodeOf(matcher.Errorf(matcher.CodeAdmissionRequired, "enter launch")); ok {
		t.Fatal("a domain error is no admission refusal of the token routes")
	}
}
