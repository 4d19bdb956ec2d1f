package matcher

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanName(t *testing.T) {
	long := strings.Repeat("é", 1000)
	for _, c := range []struct{ name, in, want string }{
		{"plain", "Ada", "Ada"},
		{"empty", "", ""},
		{"trimmed", "  Ada \t", "Ada"},
		{"collapsed", "Ada \t\n  Lovelace", "Ada Lovelace"},
		{"newlines", "Ada\r\nLovelace\n", "Ada Lovelace"},
		{"only white space", " \t\n\u00a0\u3000", ""},
		{"RTL override", "\u202eAda\u202c", "Ada"},
		{"bidi isolates and marks", "\u2066A\u2069\u200fd\u200ea", "Ada"},
		{"zero-width joiners and spaces", "A\u200dd\u200ca\u200b\ufeff", "Ada"},
		{"only invisible", "\u200b\u200d\u202e\u3164", ""},
		{"control characters", "A\x00d\x07a\x1b[31m", "Ada[31m"},
		{"C1 control", "A\u0085da", "A da"},
		{"invalid UTF-8", "A\xffd\xc3a\xed\xa0\x80", "Ada"},
		{"replacement character", "A\ufffdda", "Ada"},
		{"private use", "A\ue000da", "Ada"},
		{"noncharacter", "A\ufffeda", "Ada"},
		{"1000 runes", long, strings.Repeat("é", MaxNameRunes)},
		{"1000 bytes of x", strings.Repeat("x", 1000), strings.Repeat("x", MaxNameRunes)},
		{"cut on a rune boundary", strings.Repeat("a", MaxNameRunes-1) + "日本", strings.Repeat("a", MaxNameRunes-1) + "日"},
		{"no space left at the cut", strings.Repeat("a", MaxNameRunes-1) + " b", strings.Repeat("a", MaxNameRunes-1)},
		{"space at the cut", strings.Repeat("a", MaxNameRunes-2) + " bcd", strings.Repeat("a", MaxNameRunes-2) + " b"},
		{"emoji kept", "Ada 🎮", "Ada 🎮"},
		{"combining marks kept", "Zoe\u0301", "Zoe\u0301"},
		{"right-to-left text kept", "שלום", "שלום"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CleanName(c.in)
			if got != c.want {
				t.Fatalf("CleanName(%q) = %q, want %q", c.in, got, c.want)
			}
			if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxNameRunes || strings.TrimSpace(got) != got {
				t.Fatalf("CleanName(%q) = %q: not a clean name", c.in, got)
			}
			if again := CleanName(got); again != got {
				t.Fatalf("CleanName is not idempotent: %q then %q", got, again)
			}
		})
	}
}

func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"Ada", "\u202eAda", " a  b ", "\xff\xfe", strings.Repeat("ab ", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := CleanName(s)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxNameRunes || strings.TrimSpace(got) != got ||
			strings.Contains(got, "  ") || CleanName(got) != got {
			t.Fatalf("CleanName(%q) = %q", s, got)
		}
	})
}
