package provider_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/matchgate/matchgate/provider"
)

// benchInput is a provider queue under the load: 1,000 providers
// of 1–3 slots over five languages and ten specialties, and the oldest
// BatchMax of 5,000 waiting requesters, a pass's read.
func benchInput(providers, requesters int) ([]provider.Provider, []provider.Requester) {
	rng := rand.New(rand.NewPCG(7, 11))
	langs := []string{"en", "fr", "de", "es", "ja"}
	ps := make([]provider.Provider, providers)
	for i := range ps {
		specs := []string{fmt.Sprintf("s%d", rng.IntN(10)), fmt.Sprintf("s%d", rng.IntN(10))}
		ps[i] = provider.Provider{UserID: fmt.Sprintf("p%04d", i), Capacity: 1 + rng.IntN(3), Used: rng.IntN(2), Online: true,
			Attributes: provider.Attributes{Languages: []string{langs[rng.IntN(len(langs))], "en"}, Specialties: specs,
				SessionTypes: []string{"chat", "video"}, Rating: 2 + 3*rng.Float64()}}
	}
	rs := make([]provider.Requester, min(requesters, provider.BatchMax))
	for i := range rs {
		rs[i] = provider.Requester{TicketID: fmt.Sprintf("t%05d", i), UserID: fmt.Sprintf("u%05d", i), Enqueued: t0.Add(-time.Duration(rng.IntN(90)) * time.Second),
			Prefs: provider.Preferences{Language: langs[rng.IntN(len(langs))], Specialty: fmt.Sprintf("s%d", rng.IntN(10)), SessionType: "chat", MinRating: float64(rng.IntN(4))}}
	}
	return ps, rs
}

var benchPolicy = provider.Policy{
	Weights:  map[string]float64{provider.TermSpecialty: 2, provider.TermRating: 1, provider.TermLoad: 1, provider.TermWait: 1},
	Relax:    []provider.Relax{{After: 20 * time.Second, Drop: provider.ConstraintSpecialty}, {After: time.Minute, Drop: provider.ConstraintMinRating}},
	Shed:     []provider.Tier{{Above: 1000, Drop: []string{provider.TermSpecialty}}, {Above: 3000, Drop: []string{provider.TermLoad, provider.TermWait}}},
	Deadline: 3 * time.Minute,
}

// BenchmarkAssign is one pass's choice over 1,000 providers and the
// oldest 512 of the line, at each shed tier.
func BenchmarkAssign(b *testing.B) {
	ps, rs := benchInput(1000, 5000)
	for _, tier := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("batch/tier%d", tier), func(b *testing.B) {
			for b.Loop() {
				provider.Batch(benchPolicy, ps, rs, t0, tier)
			}
		})
		b.Run(fmt.Sprintf("greedy/tier%d", tier), func(b *testing.B) {
			for b.Loop() {
				provider.Greedy(benchPolicy, ps, rs, t0, tier)
			}
		})
	}
}
