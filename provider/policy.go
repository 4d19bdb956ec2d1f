package provider

import (
	"fmt"
	"math"
	"time"
)

// Policy is how a provider queue scores and relaxes: the queue file's
// weights, relax, shed and deadline.
type Policy struct {
	// Weights multiply each term (TermSpecialty, TermRating, TermLoad,
	// TermWait). A nil map weighs every term 1; a term missing from a
	// non-nil map weighs 0, so a queue file names what it counts.
	Weights map[string]float64
	// Relax drops constraints as a requester waits, ascending by After.
	Relax []Relax
	// Shed drops terms as the line grows: tier i is Shed[i-1], and tiers
	// 1..i all apply at tier i. Ascending by Above.
	Shed []Tier
	// Deadline is the wait at which the wait term reaches 1; 0 leaves the
	// term at 0.
	Deadline time.Duration
}

// Relax drops the constraint Drop (a Constraint* name) from a requester
// who has waited at least After.
type Relax struct {
	After time.Duration
	Drop  string
}

// Tier drops the terms Drop (Term* names) while more than Above
// requesters wait.
type Tier struct {
	Above int
	Drop  []string
}

// The terms and constraints in the order scoring and feasibility visit
// them; the order fixes the first failed constraint and the sum's rounding.
var (
	terms       = [...]string{TermSpecialty, TermRating, TermLoad, TermWait}
	constraints = [...]string{ConstraintLanguage, ConstraintSessionType, ConstraintMinRating, ConstraintSpecialty}
)

func termIndex(name string) int {
	for i, t := range terms {
		if t == name {
			return i
		}
	}
	return -1
}

func constraintIndex(name string) int {
	for i, c := range constraints {
		if c == name {
			return i
		}
	}
	return -1
}

// Validate refuses a policy that scoring would read otherwise than its
// author meant: unknown names, negative or non-finite weights, relax or
// shed entries out of order, negative durations or thresholds.
func (p Policy) Validate() error {
	for name, w := range p.Weights {
		switch {
		case termIndex(name) < 0:
			return fmt.Errorf("provider policy: unknown weight %q (want %s, %s, %s or %s)", name, terms[0], terms[1], terms[2], terms[3])
		case math.IsNaN(w) || math.IsInf(w, 0):
			return fmt.Errorf("provider policy: weight %s is %v, want a finite number", name, w)
		case w < 0:
			return fmt.Errorf("provider policy: weight %s is %v, want 0 or more", name, w)
		}
	}
	if p.Deadline < 0 {
		return fmt.Errorf("provider policy: deadline %v is negative", p.Deadline)
	}
	var dropped [len(constraints)]bool
	for i, r := range p.Relax {
		c := constraintIndex(r.Drop)
		switch {
		case c < 0:
			return fmt.Errorf("provider policy: relax %d drops unknown constraint %q (want %s, %s, %s or %s)",
				i, r.Drop, constraints[0], constraints[1], constraints[2], constraints[3])
		case dropped[c]:
			return fmt.Errorf("provider policy: relax %d drops %s, already dropped", i, r.Drop)
		case r.After < 0:
			return fmt.Errorf("provider policy: relax %d (%s) after %v is negative", i, r.Drop, r.After)
		case i > 0 && r.After < p.Relax[i-1].After:
			// Equal Afters are allowed: one entry drops one constraint, so
			// dropping two at once takes two entries.
			return fmt.Errorf("provider policy: relax %d (%s after %v) comes before relax %d (%s after %v); want ascending after",
				i, r.Drop, r.After, i-1, p.Relax[i-1].Drop, p.Relax[i-1].After)
		}
		dropped[c] = true
	}
	for i, t := range p.Shed {
		switch {
		case t.Above < 0:
			return fmt.Errorf("provider policy: shed tier %d above %d is negative", i+1, t.Above)
		case i > 0 && t.Above <= p.Shed[i-1].Above:
			// Two tiers at one threshold would always apply together.
			return fmt.Errorf("provider policy: shed tier %d (above %d) does not rise above tier %d (above %d); want strictly ascending above",
				i+1, t.Above, i, p.Shed[i-1].Above)
		}
		for _, name := range t.Drop {
			if termIndex(name) < 0 {
				return fmt.Errorf("provider policy: shed tier %d drops unknown term %q (want %s, %s, %s or %s)",
					i+1, name, terms[0], terms[1], terms[2], terms[3])
			}
		}
	}
	return nil
}

// weight is term i's weight under p.
func (p Policy) weight(i int) float64 {
	if p.Weights == nil {
		return 1
	}
	return p.Weights[terms[i]]
}

// TierFor is the shed tier for a line of waiting requesters: the highest
// tier whose Above is below waiting, 0 (full scoring) when none is.
func TierFor(p Policy, waiting int) int {
	tier := 0
	for i, t := range p.Shed {
		if t.Above < waiting {
			tier = i + 1
		}
	}
	return tier
}
