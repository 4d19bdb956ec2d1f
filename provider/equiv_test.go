package provider

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

var equivNow = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// equivInstance draws a pass from small attribute sets, so that ties
// (equal ratings, equal loads, equal waits) and contention are common:
// capacities 0–3, some providers offline, a provider or ticket named
// twice, relax and shed policies, tiers 0–2.
func equivInstance(rng *rand.Rand, maxReqs, maxProviders int) (Policy, []Provider, []Requester, int) {
	pick := func(set ...string) string { return set[rng.IntN(len(set))] }
	some := func(set ...string) []string {
		var out []string
		for _, s := range set {
			if rng.IntN(2) == 0 {
				out = append(out, s)
			}
		}
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	p := Policy{Deadline: time.Duration(rng.IntN(4)) * time.Minute}
	if rng.IntN(4) > 0 {
		p.Weights = map[string]float64{}
		for _, term := range terms {
			if rng.IntN(5) > 0 {
				p.Weights[term] = float64(rng.IntN(7)) / 2
			}
		}
	}
	switch rng.IntN(3) {
	case 0:
		p.Relax = []Relax{{After: 20 * time.Second, Drop: ConstraintSpecialty}, {After: 60 * time.Second, Drop: ConstraintLanguage}}
	case 1:
		p.Relax = []Relax{{After: 0, Drop: ConstraintMinRating}, {After: 30 * time.Second, Drop: ConstraintSessionType}}
	}
	if rng.IntN(2) == 0 {
		p.Shed = []Tier{{Above: 100, Drop: []string{TermRating, TermLoad}}, {Above: 300, Drop: []string{TermSpecialty, TermRating, TermLoad}}}
	}
	var ps []Provider
	for i := range 1 + rng.IntN(maxProviders) {
		pr := Provider{UserID: fmt.Sprintf("p%03d", rng.IntN(4*maxProviders)), Capacity: rng.IntN(4), Online: rng.IntN(8) > 0,
			Attributes: Attributes{Languages: some("en", "fr", "de"), Specialties: some("tax", "visa", "law"), SessionTypes: some("video", "chat"),
				Rating: float64(rng.IntN(5)) / 2}}
		if rng.IntN(3) == 0 {
			pr.Used = rng.IntN(pr.Capacity + 1)
		}
		switch rng.IntN(40) {
		case 0: // out of range, as a snapshot may hold it
			pr.Attributes.Rating = math.NaN()
		case 1:
			pr.Attributes.Rating = 7
		case 2:
			pr.Used = pr.Capacity + 1
		}
		if i > 0 && rng.IntN(20) == 0 {
			pr = ps[rng.IntN(len(ps))]
		}
		ps = append(ps, pr)
	}
	var rs []Requester
	for i := range 1 + rng.IntN(maxReqs) {
		r := Requester{TicketID: fmt.Sprintf("t%03d", i), Enqueued: equivNow.Add(-time.Duration(rng.IntN(8)) * 15 * time.Second),
			Prefs: Preferences{Language: pick("", "en", "fr", "de", "ja"), Specialty: pick("", "tax", "visa", "law", "art"),
				SessionType: pick("", "video", "chat"), MinRating: float64(rng.IntN(4))}}
		if i > 0 && rng.IntN(20) == 0 {
			r.TicketID = rs[rng.IntN(len(rs))].TicketID
		}
		r.UserID = "u" + r.TicketID
		rs = append(rs, r)
	}
	return p, ps, rs, rng.IntN(3)
}

func TestAssignMatchesReference(t *testing.T) {
	sizes := []struct{ reqs, providers, runs int }{
		{6, 4, 3000},           // small: the flow is optimal, fallback rare
		{40, 12, 1500},         // contended: BatchK cuts some requesters' lists
		{80, 60, 300},          // wide: many feasible providers per requester
		{BatchMax + 60, 40, 8}, // past BatchMax: the fill and the fallback
	}
	rng := rand.New(rand.NewPCG(21, 22))
	differ := 0
	for _, size := range sizes {
		for n := range size.runs {
			p, ps, rs, tier := equivInstance(rng, size.reqs, size.providers)
			name := fmt.Sprintf("%d×%d instance %d", size.reqs, size.providers, n)
			wantG, gotG := refGreedyPublic(p, ps, rs, equivNow, tier), Greedy(p, ps, rs, equivNow, tier)
			if !reflect.DeepEqual(gotG, wantG) {
				t.Fatalf("%s: greedy\n%v\nwant\n%v", name, gotG, wantG)
			}
			wantB, gotB := refBatch(p, ps, rs, equivNow, tier), Batch(p, ps, rs, equivNow, tier)
			if !reflect.DeepEqual(gotB, wantB) {
				t.Fatalf("%s: batch\n%v\nwant\n%v", name, gotB, wantB)
			}
			if !reflect.DeepEqual(wantB, wantG) {
				differ++
			}
		}
	}
	// Instances where batch and greedy agree throughout prove little of
	// the flow.
	if differ < 500 {
		t.Fatalf("batch and greedy differ on %d instances; want the flow exercised", differ)
	}
	t.Logf("batch and greedy differ on %d instances", differ)
}

func TestAssignMatchesReferenceFullSize(t *testing.T) {
	// The benchmark's shape: 1,000 providers of real-valued ratings over
	// five languages and ten specialties, BatchMax requesters.
	rng := rand.New(rand.NewPCG(31, 32))
	langs := []string{"en", "fr", "de", "es", "ja"}
	p := Policy{
		Weights:  map[string]float64{TermSpecialty: 2, TermRating: 1, TermLoad: 1, TermWait: 1},
		Relax:    []Relax{{After: 20 * time.Second, Drop: ConstraintSpecialty}, {After: time.Minute, Drop: ConstraintMinRating}},
		Shed:     []Tier{{Above: 1000, Drop: []string{TermSpecialty}}, {Above: 3000, Drop: []string{TermLoad, TermWait}}},
		Deadline: 3 * time.Minute,
	}
	for run := range 2 {
		ps := make([]Provider, 1000)
		for i := range ps {
			ps[i] = Provider{UserID: fmt.Sprintf("p%04d", i), Capacity: 1 + rng.IntN(3), Used: rng.IntN(2), Online: rng.IntN(20) > 0,
				Attributes: Attributes{Languages: []string{langs[rng.IntN(len(langs))], "en"},
					Specialties:  []string{fmt.Sprintf("s%d", rng.IntN(10)), fmt.Sprintf("s%d", rng.IntN(10))},
					SessionTypes: []string{"chat", "video"}, Rating: 2 + 3*rng.Float64()}}
		}
		rs := make([]Requester, BatchMax+run*100)
		for i := range rs {
			rs[i] = Requester{TicketID: fmt.Sprintf("t%05d", i), Enqueued: equivNow.Add(-time.Duration(rng.IntN(90)) * time.Second),
				Prefs: Preferences{Language: langs[rng.IntN(len(langs))], Specialty: fmt.Sprintf("s%d", rng.IntN(10)), SessionType: "chat", MinRating: float64(rng.IntN(4))}}
		}
		for tier := range 3 {
			if got, want := Greedy(p, ps, rs, equivNow, tier), refGreedyPublic(p, ps, rs, equivNow, tier); !reflect.DeepEqual(got, want) {
				t.Fatalf("run %d tier %d: greedy differs from the reference", run, tier)
			}
			if got, want := Batch(p, ps, rs, equivNow, tier), refBatch(p, ps, rs, equivNow, tier); !reflect.DeepEqual(got, want) {
				t.Fatalf("run %d tier %d: batch differs from the reference", run, tier)
			}
		}
	}
}
