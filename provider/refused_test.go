package provider_test

import (
	"testing"
	"time"

	"github.com/matchgate/matchgate/provider"
)

// A provider that refused a requester is never its pick again, by either
// assignment, and explain says so.
func TestRefusedProviderIsNotPickedAgain(t *testing.T) {
	p := provider.Policy{Weights: map[string]float64{provider.TermRating: 1}}
	ps := []provider.Provider{
		{UserID: "best", Capacity: 1, Online: true, Attributes: provider.Attributes{Rating: 5}},
		{UserID: "next", Capacity: 1, Online: true, Attributes: provider.Attributes{Rating: 3}},
	}
	r := ticket("t1", time.Minute, provider.Preferences{})
	for name, assign := range map[string]assigner{"batch": provider.Batch, "greedy": provider.Greedy} {
		if got := who(assign(p, ps, []provider.Requester{r}, t0, 0)); got["t1"] != "best" {
			t.Fatalf("%s: picked %v before any refusal", name, got)
		}
		refused := r
		refused.Refused = []string{"best"}
		if got := who(assign(p, ps, []provider.Requester{refused}, t0, 0)); got["t1"] != "next" {
			t.Fatalf("%s: picked %v after best refused", name, got)
		}
		refused.Refused = []string{"best", "next"}
		if got := assign(p, ps, []provider.Requester{refused}, t0, 0); len(got) != 0 {
			t.Fatalf("%s: picked %v after both refused", name, who(got))
		}
		if why := provider.Explain(p, ps, refused, t0); why != "2 online: 2 refused an offer of this requester" {
			t.Fatalf("explain = %q", why)
		}
	}
}
