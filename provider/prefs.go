package provider

import (
	"fmt"
	"math"
	"strconv"
)

// The ticket attributes a requester's preferences are read from: a join's
// attributes are strings, so minRating is a decimal number.
const (
	AttrLanguage    = "language"
	AttrSpecialty   = "specialty"
	AttrSessionType = "sessionType"
	AttrMinRating   = "minRating"
)

// PreferencesOf reads a requester's preferences from the attributes of
// its ticket; other attributes are ignored. A minRating that is no number
// in 0–5 is an error, for the join to refuse.
func PreferencesOf(attrs map[string]string) (Preferences, error) {
	p := Preferences{Language: attrs[AttrLanguage], Specialty: attrs[AttrSpecialty], SessionType: attrs[AttrSessionType]}
	if s, ok := attrs[AttrMinRating]; ok && s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 5 {
			return Preferences{}, fmt.Errorf("attribute minRating %q: want a number from 0 to 5", s)
		}
		p.MinRating = v
	}
	return p, nil
}
