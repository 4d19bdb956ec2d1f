// Package names holds the one rule for the names that end up inside Redis
// keys, URLs and metric labels: queues, regions and ranking boards.
package names

// Pattern is what Valid accepts, as error messages state it.
const Pattern = `^[a-z0-9][a-z0-9_-]{0,47}$`

// Valid reports whether s matches Pattern: lower-case letters, digits,
// '-' and '_', at most 48 characters. A loop, not Pattern's regexp: every
// join checks its queue and region.
func Valid(s string) bool {
	if s == "" || len(s) > 48 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}
