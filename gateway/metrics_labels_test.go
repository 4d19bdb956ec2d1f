package gateway

import "testing"

// Every frame type of the protocol is counted under its own label, not as
// "other": a type added to the protocol and forgotten here fails.
func TestFrameLabelsKnowEveryType(t *testing.T) {
	for _, typ := range inTypes {
		if got := inLabel(typ); got != typ {
			t.Errorf("inLabel(%q) = %q", typ, got)
		}
	}
	for _, typ := range outTypes {
		if got := outLabel(typ); got != typ {
			t.Errorf("outLabel(%q) = %q", typ, got)
		}
	}
	if inLabel("made-up") != "other" || outLabel("made-up") != "other" {
		t.Error("an unknown type is not other")
	}
}
