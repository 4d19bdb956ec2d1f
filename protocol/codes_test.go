package protocol

import (
	"net/http"
	"slices"
	"testing"

	"github.com/matchgate/matchgate/matcher"
)

// Every domain kind has a wire code of its own, and every wire code names a
// kind: a kind added to matcher without a code here would reach clients as
// INTERNAL.
func TestEveryKindHasItsOwnCode(t *testing.T) {
	seen := map[Code]matcher.Code{}
	for _, k := range matcher.Codes() {
		w, ok := wireCode[k]
		if !ok {
			t.Errorf("kind %q has no wire code", k)
			continue
		}
		if prev, dup := seen[w.code]; dup {
			t.Errorf("kinds %q and %q share the code %s", prev, k, w.code)
		}
		seen[w.code] = k
	}
	for _, c := range Codes() {
		if _, ok := seen[c]; !ok {
			t.Errorf("code %s names no kind", c)
		}
	}
	if len(seen) != len(Codes()) || len(wireCode) != len(matcher.Codes()) {
		t.Errorf("%d codes for %d kinds, %d listed", len(seen), len(matcher.Codes()), len(Codes()))
	}
	if c, st := CodeOf(matcher.Code(250)); c != CodeInternal || st != http.StatusInternalServerError {
		t.Errorf("unknown kind: %s %d, want INTERNAL 500", c, st)
	}
	if !slices.Contains(Codes(), CodeInternal) {
		t.Error("INTERNAL is not listed")
	}
}
