package matcher

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes bounds a display name, in runes.
const MaxNameRunes = 32

// CleanName is the display name a player is shown by, made from whatever a
// guest typed or a token claimed: invalid UTF-8, control and format
// characters (categories Cc and Cf: the bidi overrides and isolates, the
// zero-width joiners and spaces, the byte-order mark), private-use and
// noncharacter code points and the other invisible fillers Unicode marks
// default-ignorable (the Hangul fillers) dropped, runs of
// white space made one space, trimmed, and cut to MaxNameRunes runes. ""
// (nothing left) is no name: clients show the user id instead. A name is
// for display only and never part of the identity.
func CleanName(s string) string {
	var b strings.Builder
	n, space := 0, false
	for i := 0; i < len(s) && n < MaxNameRunes; {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError:
			// Invalid UTF-8 (or U+FFFD itself, which only marks an
			// encoding gone wrong).
		case unicode.IsSpace(r):
			space = b.Len() > 0
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Noncharacter_Code_Point, unicode.Other_Default_Ignorable_Code_Point):
		default:
			if space {
				if n+1 == MaxNameRunes {
					// No room for the word after the space.
					n = MaxNameRunes
					continue
				}
				b.WriteByte(' ')
				n++
				space = false
			}
			b.WriteRune(r)
			n++
		}
	}
	return b.String()
}
