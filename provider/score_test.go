package provider_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/provider"
)

var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// advice is the policy of the queue file's example.
var advice = provider.Policy{
	Weights:  map[string]float64{provider.TermSpecialty: 2, provider.TermRating: 1, provider.TermLoad: 1, provider.TermWait: 1},
	Relax:    []provider.Relax{{After: 20 * time.Second, Drop: provider.ConstraintSpecialty}, {After: 60 * time.Second, Drop: provider.ConstraintMinRating}},
	Deadline: 3 * time.Minute,
	Shed: []provider.Tier{
		{Above: 100, Drop: []string{provider.TermRating, provider.TermLoad}},
		{Above: 300, Drop: []string{provider.TermSpecialty, provider.TermRating, provider.TermLoad}},
	},
}

// ana can take anyone asking for what she offers.
func ana() provider.Provider {
	return provider.Provider{UserID: "ana", Capacity: 4, Used: 1, Online: true, Attributes: provider.Attributes{
		Languages: []string{"en", "fr"}, Specialties: []string{"tax", "visa"}, SessionTypes: []string{"video", "chat"}, Rating: 4,
	}}
}

func requester(wait time.Duration, prefs provider.Preferences) provider.Requester {
	return provider.Requester{TicketID: "t1", UserID: "u1", Prefs: prefs, Enqueued: t0.Add(-wait)}
}

func TestScoreFeasibility(t *testing.T) {
	offline, full, zero := ana(), ana(), ana()
	offline.Online = false
	full.Used = full.Capacity
	zero.Capacity, zero.Used = 0, 0
	all := provider.Preferences{Language: "fr", Specialty: "visa", SessionType: "chat", MinRating: 4}
	cases := []struct {
		name  string
		pr    provider.Provider
		prefs provider.Preferences
		why   string
	}{
		{"everything met", ana(), all, ""},
		{"nothing asked", ana(), provider.Preferences{}, ""},
		{"offline", offline, all, "offline"},
		{"offline even with nothing asked", offline, provider.Preferences{}, "offline"},
		{"all slots used", full, all, "at capacity"},
		{"no slots", zero, all, "at capacity"},
		{"language", ana(), provider.Preferences{Language: "de"}, provider.ConstraintLanguage},
		{"session type", ana(), provider.Preferences{SessionType: "phone"}, provider.ConstraintSessionType},
		{"rating below", ana(), provider.Preferences{MinRating: 4.5}, provider.ConstraintMinRating},
		{"rating equal", ana(), provider.Preferences{MinRating: 4}, ""},
		{"specialty", ana(), provider.Preferences{Specialty: "law"}, provider.ConstraintSpecialty},
		{"language fails first", ana(), provider.Preferences{Language: "de", SessionType: "phone", MinRating: 5, Specialty: "law"}, provider.ConstraintLanguage},
		{"session type before rating", ana(), provider.Preferences{SessionType: "phone", MinRating: 5, Specialty: "law"}, provider.ConstraintSessionType},
		{"rating before specialty", ana(), provider.Preferences{MinRating: 5, Specialty: "law"}, provider.ConstraintMinRating},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ok, why := provider.Score(advice, c.pr, requester(0, c.prefs), t0, 0)
			if why != c.why || ok != (c.why == "") {
				t.Fatalf("Score = %+v, %v, %q; want why %q", s, ok, why, c.why)
			}
			if !ok && (s.Score != 0 || s.Parts != nil) {
				t.Fatalf("infeasible pair scored %+v", s)
			}
		})
	}
}

func TestScoreRelaxAtAfter(t *testing.T) {
	prefs := provider.Preferences{Specialty: "law", MinRating: 4.5}
	for _, c := range []struct {
		wait time.Duration
		why  string
	}{
		{0, provider.ConstraintMinRating},
		{20*time.Second - time.Nanosecond, provider.ConstraintMinRating},
		// At 20s specialty is dropped, but minRating (checked first) still holds.
		{20 * time.Second, provider.ConstraintMinRating},
		{60*time.Second - time.Nanosecond, provider.ConstraintMinRating},
		{60 * time.Second, ""},
	} {
		_, ok, why := provider.Score(advice, ana(), requester(c.wait, prefs), t0, 0)
		if why != c.why || ok != (c.why == "") {
			t.Errorf("wait %v: ok %v why %q, want %q", c.wait, ok, why, c.why)
		}
	}
	// Specialty alone: dropped at exactly 20s.
	only := provider.Preferences{Specialty: "law"}
	if _, ok, why := provider.Score(advice, ana(), requester(20*time.Second-time.Nanosecond, only), t0, 0); ok || why != provider.ConstraintSpecialty {
		t.Errorf("just before 20s: ok %v why %q, want specialty", ok, why)
	}
	s, ok, _ := provider.Score(advice, ana(), requester(20*time.Second, only), t0, 0)
	if !ok {
		t.Fatal("at 20s specialty still constrains")
	}
	// A dropped constraint still scores: law is not among ana's specialties.
	if s.Parts[provider.TermSpecialty] != 0 {
		t.Errorf("specialty part %v, want 0", s.Parts[provider.TermSpecialty])
	}
	// A requester enqueued after now has waited 0, not a negative time.
	future := requester(-time.Hour, only)
	if _, ok, _ := provider.Score(provider.Policy{Relax: []provider.Relax{{After: 0, Drop: provider.ConstraintSpecialty}}}, ana(), future, t0, 0); !ok {
		t.Error("relax after 0 did not apply to a requester from the future")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

func TestScoreTerms(t *testing.T) {
	wait := 45 * time.Second // a quarter of the 3m deadline
	cases := []struct {
		name  string
		pr    func(*provider.Provider)
		prefs provider.Preferences
		parts map[string]float64
	}{
		{"primary specialty", nil, provider.Preferences{Specialty: "tax"},
			map[string]float64{"specialty": 2, "rating": 0.8, "load": 0.75, "wait": 0.25}},
		{"later specialty", nil, provider.Preferences{Specialty: "visa"},
			map[string]float64{"specialty": 1, "rating": 0.8, "load": 0.75, "wait": 0.25}},
		{"no specialty asked", nil, provider.Preferences{},
			map[string]float64{"specialty": 0, "rating": 0.8, "load": 0.75, "wait": 0.25}},
		{"rating clamped above", func(p *provider.Provider) { p.Attributes.Rating = 9 }, provider.Preferences{},
			map[string]float64{"specialty": 0, "rating": 1, "load": 0.75, "wait": 0.25}},
		{"rating clamped below", func(p *provider.Provider) { p.Attributes.Rating = -2 }, provider.Preferences{MinRating: -5},
			map[string]float64{"specialty": 0, "rating": 0, "load": 0.75, "wait": 0.25}},
		{"idle", func(p *provider.Provider) { p.Used = 0 }, provider.Preferences{},
			map[string]float64{"specialty": 0, "rating": 0.8, "load": 1, "wait": 0.25}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := ana()
			if c.pr != nil {
				c.pr(&pr)
			}
			s, ok, why := provider.Score(advice, pr, requester(wait, c.prefs), t0, 0)
			if !ok {
				t.Fatalf("infeasible: %s", why)
			}
			checkParts(t, s, c.parts)
		})
	}
	t.Run("wait saturates", func(t *testing.T) {
		s, _, _ := provider.Score(advice, ana(), requester(time.Hour, provider.Preferences{}), t0, 0)
		if s.Parts[provider.TermWait] != 1 {
			t.Fatalf("wait part %v, want 1", s.Parts[provider.TermWait])
		}
	})
	t.Run("no deadline", func(t *testing.T) {
		p := advice
		p.Deadline = 0
		s, _, _ := provider.Score(p, ana(), requester(time.Hour, provider.Preferences{}), t0, 0)
		if s.Parts[provider.TermWait] != 0 {
			t.Fatalf("wait part %v, want 0", s.Parts[provider.TermWait])
		}
	})
	t.Run("nil weights weigh 1", func(t *testing.T) {
		s, _, _ := provider.Score(provider.Policy{Deadline: 3 * time.Minute}, ana(), requester(wait, provider.Preferences{Specialty: "tax"}), t0, 0)
		checkParts(t, s, map[string]float64{"specialty": 1, "rating": 0.8, "load": 0.75, "wait": 0.25})
	})
	t.Run("weight 0 is not used", func(t *testing.T) {
		p := provider.Policy{Weights: map[string]float64{provider.TermRating: 3, provider.TermLoad: 0}}
		s, _, _ := provider.Score(p, ana(), requester(wait, provider.Preferences{Specialty: "tax"}), t0, 0)
		checkParts(t, s, map[string]float64{"rating": 2.4})
	})
}

func checkParts(t *testing.T, s provider.Scored, want map[string]float64) {
	t.Helper()
	sum := 0.0
	for term, v := range want {
		got, ok := s.Parts[term]
		if !ok || !near(got, v) {
			t.Errorf("part %s = %v (present %v), want %v", term, got, ok, v)
		}
		sum += v
	}
	if len(s.Parts) != len(want) {
		t.Errorf("parts %v, want exactly %v", s.Parts, want)
	}
	if !near(s.Score, sum) {
		t.Errorf("score %v, want %v", s.Score, sum)
	}
}

func TestScoreShed(t *testing.T) {
	r := requester(45*time.Second, provider.Preferences{Specialty: "tax"})
	for _, c := range []struct {
		tier, wantTier int
		parts          map[string]float64
	}{
		{0, 0, map[string]float64{"specialty": 2, "rating": 0.8, "load": 0.75, "wait": 0.25}},
		{1, 1, map[string]float64{"specialty": 2, "wait": 0.25}},
		{2, 2, map[string]float64{"wait": 0.25}},
		// Out of range tiers are clamped, not refused.
		{7, 2, map[string]float64{"wait": 0.25}},
		{-1, 0, map[string]float64{"specialty": 2, "rating": 0.8, "load": 0.75, "wait": 0.25}},
	} {
		s, ok, why := provider.Score(advice, ana(), r, t0, c.tier)
		if !ok {
			t.Fatalf("tier %d: infeasible: %s", c.tier, why)
		}
		if s.Tier != c.wantTier {
			t.Errorf("tier %d: scored at tier %d, want %d", c.tier, s.Tier, c.wantTier)
		}
		checkParts(t, s, c.parts)
	}
	// Tiers accumulate: tier 2 drops what tier 1 drops even if it names less.
	p := provider.Policy{Shed: []provider.Tier{{Above: 1, Drop: []string{provider.TermRating}}, {Above: 2, Drop: []string{provider.TermLoad}}}}
	s, _, _ := provider.Score(p, ana(), r, t0, 2)
	checkParts(t, s, map[string]float64{"specialty": 1, "wait": 0})
}

// randomPair draws a provider, a requester and a policy from small sets so
// that every constraint both holds and fails often.
func randomPair(rng *rand.Rand) (provider.Policy, provider.Provider, provider.Requester) {
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
	p := provider.Policy{Deadline: time.Duration(rng.IntN(4)) * time.Minute}
	if rng.IntN(4) > 0 {
		p.Weights = map[string]float64{}
		for _, term := range []string{"specialty", "rating", "load", "wait"} {
			if rng.IntN(5) > 0 {
				p.Weights[term] = float64(rng.IntN(7)) / 2
			}
		}
	}
	if rng.IntN(2) == 0 {
		p.Relax = []provider.Relax{{After: 20 * time.Second, Drop: provider.ConstraintSpecialty}, {After: 60 * time.Second, Drop: provider.ConstraintLanguage}}
	}
	if rng.IntN(2) == 0 {
		p.Shed = advice.Shed
	}
	capacity := rng.IntN(4)
	pr := provider.Provider{
		UserID: "p", Capacity: capacity, Used: rng.IntN(capacity + 1), Online: rng.IntN(6) > 0,
		Attributes: provider.Attributes{
			Languages: some("en", "fr", "de"), Specialties: some("tax", "visa", "law"), SessionTypes: some("video", "chat"),
			Rating: float64(rng.IntN(11)) / 2,
		},
	}
	r := provider.Requester{TicketID: "t", UserID: "u", Enqueued: t0.Add(-time.Duration(rng.IntN(300)) * time.Second), Prefs: provider.Preferences{
		Language: pick("", "en", "fr", "de"), Specialty: pick("", "tax", "visa", "law"), SessionType: pick("", "video", "chat"),
		MinRating: float64(rng.IntN(6)),
	}}
	return p, pr, r
}

func TestScorePartsSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	scored := 0
	whys := map[string]int{}
	for range 20000 {
		p, pr, r := randomPair(rng)
		tier := rng.IntN(4)
		s, ok, why := provider.Score(p, pr, r, t0, tier)
		whys[why]++
		if !ok {
			continue
		}
		scored++
		sum := 0.0
		for term, v := range s.Parts {
			w := 1.0
			if p.Weights != nil {
				w = p.Weights[term]
			}
			if v < 0 || v > w+1e-12 {
				t.Fatalf("part %s = %v outside [0, weight %v]", term, v, w)
			}
			sum += v
		}
		if !near(sum, s.Score) {
			t.Fatalf("parts %v sum to %v, score %v", s.Parts, sum, s.Score)
		}
		again, _, _ := provider.Score(p, pr, r, t0, tier)
		if again.Score != s.Score {
			t.Fatalf("scores of one pair differ: %v, %v", s.Score, again.Score)
		}
	}
	// The draw must reach every outcome, or the test proves less than it says.
	for _, why := range []string{"", "offline", "at capacity", "language", "sessionType", "minRating", "specialty"} {
		if whys[why] == 0 {
			t.Errorf("no pair drawn with why %q (%v)", why, whys)
		}
	}
}

func TestScoreAllocatesOnlyParts(t *testing.T) {
	r := requester(45*time.Second, provider.Preferences{Specialty: "tax", Language: "fr"})
	pr := ana()
	var m map[string]float64
	parts := testing.AllocsPerRun(100, func() {
		m = make(map[string]float64, 4)
		m[provider.TermSpecialty], m[provider.TermWait] = 1, 1
	})
	allocs := testing.AllocsPerRun(100, func() { provider.Score(advice, pr, r, t0, 1) })
	if allocs > parts {
		t.Errorf("Score allocates %v times, want the parts map's %v alone", allocs, parts)
	}
	pr.Online = false
	if allocs := testing.AllocsPerRun(100, func() { provider.Score(advice, pr, r, t0, 1) }); allocs != 0 {
		t.Errorf("an infeasible Score allocates %v times, want 0", allocs)
	}
}

func TestExplain(t *testing.T) {
	fr := requester(0, provider.Preferences{Language: "fr", MinRating: 4.5, Specialty: "law", SessionType: "chat"})
	en := func(id string) provider.Provider {
		p := ana()
		p.UserID = id
		p.Attributes.Languages = []string{"en"}
		return p
	}
	full, off, low, nolaw, nochat := ana(), ana(), ana(), ana(), ana()
	full.Used = full.Capacity
	off.Online = false
	low.Attributes.Specialties = []string{"law"}
	nolaw.Attributes.Rating = 5
	nochat.Attributes.Rating, nochat.Attributes.Specialties, nochat.Attributes.SessionTypes = 5, []string{"law"}, []string{"video"}
	ok := ana()
	ok.Attributes.Rating, ok.Attributes.Specialties = 5, []string{"law"}
	for _, c := range []struct {
		name      string
		providers []provider.Provider
		want      string
	}{
		{"none", nil, "no provider online"},
		{"all offline", []provider.Provider{off, off}, "no provider online"},
		{"the brief's example", []provider.Provider{en("a"), off, full, en("b")}, "3 online: 2 without language fr, 1 at capacity"},
		{"every reason", []provider.Provider{full, en("a"), nochat, low, nolaw}, "5 online: 1 at capacity, 1 without language fr, 1 without session type chat, 1 rated below 4.5, 1 without specialty law"},
		{"most common first", []provider.Provider{full, low, low}, "3 online: 2 rated below 4.5, 1 at capacity"},
		{"one feasible", []provider.Provider{en("a"), full, ok}, ""},
	} {
		if got := provider.Explain(advice, c.providers, fr, t0); got != c.want {
			t.Errorf("%s: Explain = %q, want %q", c.name, got, c.want)
		}
	}
	// Relax counts: past 60s the rating no longer stops low.
	late := fr
	late.Enqueued = t0.Add(-time.Minute)
	if got := provider.Explain(advice, []provider.Provider{low}, late, t0); got != "" {
		t.Errorf("Explain after relax = %q, want \"\"", got)
	}
}

func TestTierFor(t *testing.T) {
	for _, c := range []struct{ waiting, tier int }{{0, 0}, {100, 0}, {101, 1}, {300, 1}, {301, 2}, {1 << 20, 2}} {
		if got := provider.TierFor(advice, c.waiting); got != c.tier {
			t.Errorf("TierFor(%d) = %d, want %d", c.waiting, got, c.tier)
		}
	}
	if got := provider.TierFor(provider.Policy{}, 1000); got != 0 {
		t.Errorf("TierFor without tiers = %d, want 0", got)
	}
}

func TestValidate(t *testing.T) {
	if err := advice.Validate(); err != nil {
		t.Fatalf("the example policy: %v", err)
	}
	if err := (provider.Policy{}).Validate(); err != nil {
		t.Fatalf("the empty policy: %v", err)
	}
	same := provider.Policy{Relax: []provider.Relax{{After: time.Second, Drop: "language"}, {After: time.Second, Drop: "specialty"}}}
	if err := same.Validate(); err != nil {
		t.Fatalf("two relax entries at one time: %v", err)
	}
	for _, c := range []struct {
		name string
		p    provider.Policy
		want string
	}{
		{"unknown weight", provider.Policy{Weights: map[string]float64{"price": 1}}, `unknown weight "price"`},
		{"negative weight", provider.Policy{Weights: map[string]float64{"rating": -1}}, "weight rating is -1"},
		{"NaN weight", provider.Policy{Weights: map[string]float64{"load": math.NaN()}}, "finite"},
		{"infinite weight", provider.Policy{Weights: map[string]float64{"load": math.Inf(1)}}, "finite"},
		{"negative deadline", provider.Policy{Deadline: -time.Second}, "deadline"},
		{"unknown relax", provider.Policy{Relax: []provider.Relax{{Drop: "rating"}}}, `unknown constraint "rating"`},
		{"relax twice", provider.Policy{Relax: []provider.Relax{{Drop: "language"}, {After: time.Second, Drop: "language"}}}, "already dropped"},
		{"relax negative", provider.Policy{Relax: []provider.Relax{{After: -time.Second, Drop: "language"}}}, "negative"},
		{"relax descending", provider.Policy{Relax: []provider.Relax{{After: time.Minute, Drop: "language"}, {After: time.Second, Drop: "specialty"}}}, "want ascending after"},
		{"unknown shed term", provider.Policy{Shed: []provider.Tier{{Above: 1, Drop: []string{"minRating"}}}}, `unknown term "minRating"`},
		{"shed negative", provider.Policy{Shed: []provider.Tier{{Above: -1}}}, "negative"},
		{"shed descending", provider.Policy{Shed: []provider.Tier{{Above: 300}, {Above: 100}}}, "strictly ascending"},
		{"shed equal", provider.Policy{Shed: []provider.Tier{{Above: 100}, {Above: 100}}}, "strictly ascending"},
	} {
		err := c.p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want an error with %q", c.name, err, c.want)
		}
	}
}
