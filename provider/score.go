package provider

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scored is a feasible pair's score: the sum of the weighted terms used,
// each term's contribution in Parts, at shed tier Tier.
type Scored struct {
	Score float64
	Parts map[string]float64 // term → weight·value, only the terms used
	Tier  int
}

// The reasons a provider cannot take a requester besides a failed
// constraint, whose reason is the constraint's name.
const (
	whyOffline    = "offline"
	whyAtCapacity = "at capacity"
	whyRefused    = "refused"
)

// Score scores provider pr for requester r at now under p, shed to tier.
// An infeasible pair is not scored: ok is false and why is the first
// reason — "offline", "at capacity" or the failed constraint's name.
// A used term is one not shed and of positive weight.
func Score(p Policy, pr Provider, r Requester, now time.Time, tier int) (s Scored, ok bool, why string) {
	if why := feasible(p, pr, r, now); why != "" {
		return Scored{}, false, why
	}
	tier = clampTier(p, tier)
	s = Scored{Tier: tier, Parts: make(map[string]float64, len(terms))}
	s.Score = score(p, pr, r, now, tier, s.Parts)
	return s, true, ""
}

func clampTier(p Policy, tier int) int {
	return min(max(tier, 0), len(p.Shed))
}

// feasible returns "" when pr can take r at now, else the first reason it
// cannot.
func feasible(p Policy, pr Provider, r Requester, now time.Time) string {
	if pr.Free() <= 0 {
		if !pr.Online {
			return whyOffline
		}
		return whyAtCapacity
	}
	if slices.Contains(r.Refused, pr.UserID) {
		return whyRefused
	}
	var dropped [len(constraints)]bool
	wait := r.Wait(now)
	for _, x := range p.Relax {
		if c := constraintIndex(x.Drop); c >= 0 && x.After <= wait {
			dropped[c] = true
		}
	}
	for c, name := range constraints {
		if dropped[c] {
			continue
		}
		var met bool
		switch name {
		case ConstraintLanguage:
			met = r.Prefs.Language == "" || slices.Contains(pr.Attributes.Languages, r.Prefs.Language)
		case ConstraintSessionType:
			met = r.Prefs.SessionType == "" || slices.Contains(pr.Attributes.SessionTypes, r.Prefs.SessionType)
		case ConstraintMinRating:
			met = pr.Attributes.Rating >= r.Prefs.MinRating
		case ConstraintSpecialty:
			met = r.Prefs.Specialty == "" || slices.Contains(pr.Attributes.Specialties, r.Prefs.Specialty)
		}
		if !met {
			return name
		}
	}
	return ""
}

// score sums the weighted terms of a feasible pair at a clamped tier, in
// the fixed order of terms so that equal inputs round alike; it writes
// each used term's contribution to parts unless parts is nil.
func score(p Policy, pr Provider, r Requester, now time.Time, tier int, parts map[string]float64) float64 {
	var shed [len(terms)]bool
	for _, t := range p.Shed[:tier] {
		for _, name := range t.Drop {
			if i := termIndex(name); i >= 0 {
				shed[i] = true
			}
		}
	}
	total := 0.0
	for i, name := range terms {
		w := p.weight(i)
		if shed[i] || !(w > 0) {
			continue
		}
		var v float64
		switch name {
		case TermSpecialty:
			if want := r.Prefs.Specialty; want != "" {
				if i := slices.Index(pr.Attributes.Specialties, want); i == 0 {
					v = 1
				} else if i > 0 {
					v = 0.5
				}
			}
		case TermRating:
			v = unit(pr.Attributes.Rating / 5)
		case TermLoad:
			if pr.Capacity > 0 {
				v = unit(1 - float64(pr.Used)/float64(pr.Capacity))
			}
		case TermWait:
			if p.Deadline > 0 {
				v = unit(float64(r.Wait(now)) / float64(p.Deadline))
			}
		}
		c := w * v
		total += c
		if parts != nil {
			parts[name] = c
		}
	}
	return total
}

// unit clamps v to [0,1]; NaN is 0.
func unit(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return min(v, 1)
}

// Explain says why r has no provider yet, counting the providers by the
// first reason each cannot take r: "no provider online", or "3 online: 2
// without language fr, 1 at capacity". It is "" when one can take r.
func Explain(p Policy, providers []Provider, r Requester, now time.Time) string {
	reasons := [...]string{whyAtCapacity, whyRefused, ConstraintLanguage, ConstraintSessionType, ConstraintMinRating, ConstraintSpecialty}
	var counts [len(reasons)]int
	online := 0
	for _, pr := range providers {
		if !pr.Online {
			continue
		}
		online++
		why := feasible(p, pr, r, now)
		if why == "" {
			return ""
		}
		counts[slices.Index(reasons[:], why)]++
	}
	if online == 0 {
		return "no provider online"
	}
	order := []int{0, 1, 2, 3, 4, 5}
	// The most common reason first; ties keep the order of reasons.
	slices.SortStableFunc(order, func(a, b int) int { return counts[b] - counts[a] })
	var b strings.Builder
	fmt.Fprintf(&b, "%d online:", online)
	sep := " "
	for _, i := range order {
		if counts[i] == 0 {
			continue
		}
		b.WriteString(sep)
		sep = ", "
		fmt.Fprintf(&b, "%d ", counts[i])
		switch reasons[i] {
		case whyAtCapacity:
			b.WriteString("at capacity")
		case whyRefused:
			b.WriteString("refused an offer of this requester")
		case ConstraintLanguage:
			b.WriteString("without language " + r.Prefs.Language)
		case ConstraintSessionType:
			b.WriteString("without session type " + r.Prefs.SessionType)
		case ConstraintMinRating:
			b.WriteString("rated below " + strconv.FormatFloat(r.Prefs.MinRating, 'g', -1, 64))
		case ConstraintSpecialty:
			b.WriteString("without specialty " + r.Prefs.Specialty)
		}
	}
	return b.String()
}
