package ledger

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// canonicalID's shortcut for canonical ids must answer as the parse does,
// for every form PostgreSQL accepts and for near misses.
func TestCanonicalIDShortcutAgreesWithTheParse(t *testing.T) {
	const id = "0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d"
	ids := []string{
		id,
		strings.ToUpper(id),
		"{" + id + "}",
		"urn:uuid:" + id,
		strings.ReplaceAll(id, "-", ""),
		"0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2g", // not hex
		"0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2",  // short
		"0b6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d0",
		"0b6a5b0c+2f0e-4d7f-8d4e-3c0f6a9b1c2d", // hyphen misplaced
		"0b6a5b0c2-f0e-4d7f-8d4e-3c0f6a9b1c2d",
		"0B6a5b0c-2f0e-4d7f-8d4e-3c0f6a9b1c2d", // one upper-case digit
		"",
	}
	for _, in := range ids {
		want, wantOK := "", false
		if u, err := uuid.Parse(in); err == nil {
			want, wantOK = u.String(), true
		}
		got, ok := canonicalID(in)
		if got != want || ok != wantOK {
			t.Errorf("canonicalID(%q) = %q, %v; the parse gives %q, %v", in, got, ok, want, wantOK)
		}
		if isCanonicalID(in) && in != want {
			t.Errorf("%q taken as canonical; its canonical form is %q", in, want)
		}
	}
}
