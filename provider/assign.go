package provider

import (
	"cmp"
	"math/bits"
	"slices"
	"time"
)

// The bounds of one batch pass: the oldest BatchMax requesters, each with
// edges to its BatchK best feasible providers, keep the flow's graph small
// enough for a pass to stay short; whoever the bound leaves out is filled
// in greedily after.
const (
	BatchK   = 16
	BatchMax = 512
)

// Pick gives Requester a slot of the provider whose user id is Provider,
// with the pair's score.
type Pick struct {
	Requester Requester
	Provider  string
	Scored
}

// Both passes score every pair on the snapshot they are given (a pick
// does not change the load term of the picks after it), so that their
// totals compare and a batch's optimum is one of fixed edge weights.

// prepare orders a pass's input so that equal inputs give equal picks
// whatever their order: providers by user id, requesters oldest first
// (Enqueued, then TicketID). A provider named twice keeps its first entry
// and a ticket named twice its oldest, so neither slots nor tickets count
// twice.
func prepare(providers []Provider, reqs []Requester) ([]Provider, []Requester) {
	ps := slices.Clone(providers)
	slices.SortStableFunc(ps, func(a, b Provider) int { return cmp.Compare(a.UserID, b.UserID) })
	ps = slices.CompactFunc(ps, func(a, b Provider) bool { return a.UserID == b.UserID })
	rs := slices.Clone(reqs)
	slices.SortStableFunc(rs, func(a, b Requester) int {
		if c := a.Enqueued.Compare(b.Enqueued); c != 0 {
			return c
		}
		return cmp.Compare(a.TicketID, b.TicketID)
	})
	seen := make(map[string]bool, len(rs))
	rs = slices.DeleteFunc(rs, func(r Requester) bool {
		dup := seen[r.TicketID]
		seen[r.TicketID] = true
		return dup
	})
	return ps, rs
}

func frees(ps []Provider) []int {
	free := make([]int, len(ps))
	for i, pr := range ps {
		free[i] = pr.Free()
	}
	return free
}

func newPick(p Policy, pr Provider, r Requester, now time.Time, tier int) Pick {
	s := Scored{Tier: tier, Parts: make(map[string]float64, len(terms))}
	s.Score = score(p, pr, r, now, tier, s.Parts)
	return Pick{Requester: r, Provider: pr.UserID, Scored: s}
}

// Greedy gives each requester, oldest first, the feasible provider with a
// slot left that scores highest for it (ties: more slots left, then the
// smaller user id). Picks come oldest requester first.
func Greedy(p Policy, providers []Provider, reqs []Requester, now time.Time, tier int) []Pick {
	ps, rs := prepare(providers, reqs)
	tier = clampTier(p, tier)
	return greedy(p, newIndex(p, ps, rs, now, tier), rs, now, tier)
}

// greedy is Greedy on prepared input and its index.
func greedy(p Policy, x *index, rs []Requester, now time.Time, tier int) []Pick {
	free := frees(x.ps)
	live := liveSet(free)
	var picks []Pick
	for i, r := range rs {
		if j := x.best(i, live, free); j >= 0 {
			take(live, free, j)
			picks = append(picks, newPick(p, x.ps[j], r, now, tier))
		}
	}
	return picks
}

// Batch assigns the oldest BatchMax requesters as a maximum-weight
// maximum b-matching: as many requesters as the providers' free slots can
// take, and among those assignments the one of highest total score, each
// requester limited to its BatchK best feasible providers. It runs
// successive shortest augmenting paths (SPFA, costs the negated scores) on
// the flow network source → requester (1) → provider (free slots) → sink;
// every augmentation adds one requester, so the flow of each size is the
// cheapest, and the last is the cheapest of maximum size. The requesters
// the bounds left out or left unassigned then take, oldest first, the best
// provider with a slot left, as in Greedy. Where the bounds cut the graph
// the result is optimal only within them, so Greedy's picks are taken
// instead when they seat more, or as many for a higher total: a batch is
// never worse than greedy. Picks come oldest requester first.
func Batch(p Policy, providers []Provider, reqs []Requester, now time.Time, tier int) []Pick {
	ps, rs := prepare(providers, reqs)
	tier = clampTier(p, tier)
	x := newIndex(p, ps, rs, now, tier)
	free := frees(ps)
	n := min(len(rs), BatchMax)

	g := newFlow(n, free)
	var cands [BatchK]cand
	truncated := false
	for i := range n {
		// The BatchK first in the order below, kept sorted as they come:
		// the order is total (j breaks every tie), so these are the ones
		// sorting all and cutting would keep.
		k, found := 0, 0
		for wd, set := range x.reqs[i].feasible {
			for m := set; m != 0; m &= m - 1 {
				j := wd*64 + bits.TrailingZeros64(m)
				c := cand{j, x.score(i, j)}
				found++
				if k == BatchK {
					if before(c, cands[k-1], free) >= 0 {
						continue
					}
					k--
				}
				at := k
				for ; at > 0 && before(c, cands[at-1], free) < 0; at-- {
					cands[at] = cands[at-1]
				}
				cands[at] = c
				k++
			}
		}
		truncated = truncated || found > BatchK
		g.candidates(i, cands[:k])
	}
	for g.augment() {
	}
	match := make([]int, len(rs)) // requester → provider index, -1 none
	for i := range match {
		match[i] = -1
	}
	for i := range n {
		if j := g.match[i]; j >= 0 {
			match[i] = j
			free[j]--
		}
	}
	live := liveSet(free)
	for i := range rs {
		if match[i] < 0 {
			if j := x.best(i, live, free); j >= 0 {
				take(live, free, j)
				match[i] = j
			}
		}
	}
	var picks []Pick
	for i, r := range rs {
		if j := match[i]; j >= 0 {
			picks = append(picks, newPick(p, ps[j], r, now, tier))
		}
	}
	// Within the bounds the flow is optimal and greedy cannot do better;
	// past them (a requester's BatchK best providers contended, or more
	// than BatchMax waiting) it can, and then its picks are the pass's.
	if n < len(rs) || truncated {
		if gp := greedy(p, x, rs, now, tier); len(gp) > len(picks) || len(gp) == len(picks) && sum(gp) > sum(picks) {
			return gp
		}
	}
	return picks
}

type cand struct {
	j int
	s float64
}

// before orders a requester's candidates: higher score, then more slots
// left, then the smaller user id.
func before(a, b cand, free []int) int {
	if c := cmp.Compare(b.s, a.s); c != 0 {
		return c
	}
	if c := cmp.Compare(free[b.j], free[a.j]); c != 0 {
		return c
	}
	return cmp.Compare(a.j, b.j)
}

func sum(picks []Pick) float64 {
	total := 0.0
	for _, pk := range picks {
		total += pk.Score
	}
	return total
}
