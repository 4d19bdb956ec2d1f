package provider

import (
	"math/bits"
	"slices"
	"strings"
	"time"
)

// index is what a pass reads for every pair, computed once from one side
// at a time: the terms before wait per provider and specialty level, each
// requester's wait term, and as bit sets over the prepared providers
// (user id order) the feasible ones of each requester. Scoring a pair is
// then a load and an add, and sums the same terms in the same order as
// score, so that the two agree to the bit.
type index struct {
	ps    []Provider
	words int
	// pre[j][l] sums the used terms before wait for provider j at
	// specialty level l: 0 unmatched (or not asked), 1 secondary, 2
	// primary.
	pre      [][3]float64
	specUsed bool
	waitUsed bool
	reqs     []reqIndex
}

// reqIndex is one requester's side: its feasible providers (shared
// between requesters asking alike), its specialty's provider sets and its
// wait term.
type reqIndex struct {
	feasible []uint64
	specAny  []uint64 // nil: no specialty asked
	specPrim []uint64
	wait     float64
}

func newIndex(p Policy, ps []Provider, rs []Requester, now time.Time, tier int) *index {
	x := &index{ps: ps, words: (len(ps) + 63) / 64, pre: make([][3]float64, len(ps)), reqs: make([]reqIndex, len(rs))}
	var shed [len(terms)]bool
	for _, t := range p.Shed[:tier] {
		for _, name := range t.Drop {
			if i := termIndex(name); i >= 0 {
				shed[i] = true
			}
		}
	}
	var w [len(terms)]float64
	var used [len(terms)]bool
	for i := range terms {
		w[i] = p.weight(i)
		used[i] = !shed[i] && w[i] > 0
	}
	const spec, rating, load, wait = 0, 1, 2, 3 // the order of terms
	x.specUsed, x.waitUsed = used[spec], used[wait]
	for j, pr := range ps {
		for l, v := range [3]float64{0, 0.5, 1} {
			total := 0.0
			if used[spec] {
				c := w[spec] * v
				total += c
			}
			if used[rating] {
				c := w[rating] * unit(pr.Attributes.Rating/5)
				total += c
			}
			if used[load] {
				var v float64
				if pr.Capacity > 0 {
					v = unit(1 - float64(pr.Used)/float64(pr.Capacity))
				}
				c := w[load] * v
				total += c
			}
			x.pre[j][l] = total
		}
	}

	// The strings requesters ask for, each with its providers as bit sets;
	// a provider's other strings matter to nobody in this pass.
	ids := map[string]int{}
	intern := func(s string) {
		if _, ok := ids[s]; !ok && s != "" {
			ids[s] = len(ids)
		}
	}
	for _, r := range rs {
		intern(r.Prefs.Language)
		intern(r.Prefs.SessionType)
		intern(r.Prefs.Specialty)
	}
	sets := func() [][]uint64 {
		s := make([][]uint64, len(ids))
		backing := make([]uint64, len(ids)*x.words)
		for i := range s {
			s[i] = backing[i*x.words : (i+1)*x.words : (i+1)*x.words]
		}
		return s
	}
	langs, sessions, specAny, specPrim := sets(), sets(), sets(), sets()
	free := make([]uint64, x.words)
	mark := func(s [][]uint64, names []string, j int) {
		for _, name := range names {
			if id, ok := ids[name]; ok {
				s[id][j/64] |= 1 << (j % 64)
			}
		}
	}
	for j, pr := range ps {
		if pr.Free() > 0 {
			free[j/64] |= 1 << (j % 64)
		}
		mark(langs, pr.Attributes.Languages, j)
		mark(sessions, pr.Attributes.SessionTypes, j)
		mark(specAny, pr.Attributes.Specialties, j)
		if len(pr.Attributes.Specialties) > 0 {
			mark(specPrim, pr.Attributes.Specialties[:1], j)
		}
	}

	// Requesters whose remaining constraints are equal share one set.
	type key struct {
		lang, session, spec string
		minRating           float64
		rated               bool
	}
	shared := map[key][]uint64{}
	for i, r := range rs {
		var dropped [len(constraints)]bool
		waited := r.Wait(now)
		for _, rx := range p.Relax {
			if c := constraintIndex(rx.Drop); c >= 0 && rx.After <= waited {
				dropped[c] = true
			}
		}
		k := key{}
		if !dropped[0] {
			k.lang = r.Prefs.Language
		}
		if !dropped[1] {
			k.session = r.Prefs.SessionType
		}
		if !dropped[2] {
			k.minRating, k.rated = r.Prefs.MinRating, true
		}
		if !dropped[3] {
			k.spec = r.Prefs.Specialty
		}
		set, ok := shared[k]
		if !ok {
			set = make([]uint64, x.words)
			copy(set, free)
			for _, c := range [...]struct {
				want string
				in   [][]uint64
			}{{k.lang, langs}, {k.session, sessions}, {k.spec, specAny}} {
				if c.want != "" {
					for wd, b := range c.in[ids[c.want]] {
						set[wd] &= b
					}
				}
			}
			if k.rated {
				for j, pr := range ps {
					if !(pr.Attributes.Rating >= k.minRating) {
						set[j/64] &^= 1 << (j % 64)
					}
				}
			}
			shared[k] = set
		}
		if len(r.Refused) > 0 {
			// Its own set: the providers that refused it are out.
			own := slices.Clone(set)
			for _, u := range r.Refused {
				if j, ok := slices.BinarySearchFunc(ps, u, func(p Provider, u string) int { return strings.Compare(p.UserID, u) }); ok {
					own[j/64] &^= 1 << (j % 64)
				}
			}
			set = own
		}
		ri := reqIndex{feasible: set}
		if want := r.Prefs.Specialty; want != "" {
			ri.specAny, ri.specPrim = specAny[ids[want]], specPrim[ids[want]]
		}
		if used[wait] {
			var v float64
			if p.Deadline > 0 {
				v = unit(float64(waited) / float64(p.Deadline))
			}
			c := w[wait] * v
			ri.wait = c
		}
		x.reqs[i] = ri
	}
	return x
}

// score is score's total for requester i and provider j, a feasible pair.
func (x *index) score(i, j int) float64 {
	r := &x.reqs[i]
	l := 0
	if x.specUsed && r.specAny != nil {
		bit := uint64(1) << (j % 64)
		if r.specPrim[j/64]&bit != 0 {
			l = 2
		} else if r.specAny[j/64]&bit != 0 {
			l = 1
		}
	}
	total := x.pre[j][l]
	if x.waitUsed {
		total += r.wait
	}
	return total
}

// best is best for requester i over the providers set in live, those
// with a slot left in free.
func (x *index) best(i int, live []uint64, free []int) int {
	at, top := -1, 0.0
	for wd, set := range x.reqs[i].feasible {
		for m := set & live[wd]; m != 0; m &= m - 1 {
			j := wd*64 + bits.TrailingZeros64(m)
			if s := x.score(i, j); at < 0 || s > top || s == top && free[j] > free[at] {
				at, top = j, s
			}
		}
	}
	return at
}

// take uses one of provider j's slots, clearing it from live when none
// is left.
func take(live []uint64, free []int, j int) {
	if free[j]--; free[j] <= 0 {
		live[j/64] &^= 1 << (j % 64)
	}
}

func liveSet(free []int) []uint64 {
	live := make([]uint64, (len(free)+63)/64)
	for j, f := range free {
		if f > 0 {
			live[j/64] |= 1 << (j % 64)
		}
	}
	return live
}
