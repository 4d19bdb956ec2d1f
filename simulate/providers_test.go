package simulate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matchgate/matchgate/matcher"
)

func TestProviderDeterministic(t *testing.T) {
	first := outputs(t, runScenario(t, readScenario(t, "testdata/providers.yaml"), Options{}))
	second := outputs(t, runScenario(t, readScenario(t, "testdata/providers.yaml"), Options{}))
	if !bytes.Equal(first, second) {
		t.Fatalf("two runs of one seed differ:\n%s\n---\n%s", first, second)
	}
	other := readScenario(t, "testdata/providers.yaml")
	other.Seed++
	if bytes.Equal(first, outputs(t, runScenario(t, other, Options{}))) {
		t.Fatal("two seeds gave the same output")
	}
}

// Every requester ends one way, no provider ever holds more than its
// capacity, and every offer is accepted, declined or let pass.
func TestProviderOutcomes(t *testing.T) {
	rep := runScenario(t, readScenario(t, "testdata/providers.yaml"), Options{})
	for _, c := range rep.Configs {
		p := c.Provider
		if p == nil {
			t.Fatalf("%s: no provider report", c.Name)
		}
		if c.Joins < 200 {
			t.Fatalf("%s: %d joins, want about 290", c.Name, c.Joins)
		}
		ended := c.Matched + c.Cancelled + c.Declined + c.AcceptTimeout + c.Expired + c.Other
		if ended != c.Joins || c.WaitingAtEnd != 0 || c.PassErrors != 0 {
			t.Errorf("%s: %d joins, %d ended, %d left waiting, %d pass errors", c.Name, c.Joins, ended, c.WaitingAtEnd, c.PassErrors)
		}
		if p.OverCapacity != 0 {
			t.Errorf("%s: a provider held more than its capacity %d times", c.Name, p.OverCapacity)
		}
		if p.Offers != c.Matches+p.Declined+p.Lapsed+p.Withdrawn || c.Dissolved != p.Declined+p.Lapsed+p.Withdrawn || p.Lapsed < 0 {
			t.Errorf("%s: %d offers, %d accepted, %d declined, %d let pass, %d withdrawn, %d dissolved",
				c.Name, p.Offers, c.Matches, p.Declined, p.Lapsed, p.Withdrawn, c.Dissolved)
		}
		if p.Declined == 0 || p.Lapsed == 0 {
			t.Errorf("%s: %d declined and %d let pass, want some of each", c.Name, p.Declined, p.Lapsed)
		}
		if !(p.Utilisation > 0 && p.Utilisation <= 1) || !(p.ScoreP50 > 0 && p.ScoreP50 <= p.ScoreP90) {
			t.Errorf("%s: utilisation %v, score p50 %v p90 %v", c.Name, p.Utilisation, p.ScoreP50, p.ScoreP90)
		}
		if p.SessionsEnded == 0 || p.SessionsEnded > c.Matches {
			t.Errorf("%s: %d sessions ended of %d begun", c.Name, p.SessionsEnded, c.Matches)
		}
	}
}

// A requester whose language no provider speaks waits until the relax
// drops it, then is served.
func TestProviderLanguageNobodySpeaks(t *testing.T) {
	sc := mustScenario(t, `
seed: 3
arrivals:
  list: [{at: 0s, user: a}, {at: 1s, user: b}, {at: 2s, user: c}]
providers:
  groups: [{count: 3, languages: {en: 1}}]
  session: {fixed: 1m}
requesters:
  language: {xx: 1}
configs:
  - name: relaxed
    queue:
      kind: provider
      acceptWindow: 0s
      deadline: 2m
      relax: [{after: 20s, drop: language}]
`)
	c := runScenario(t, sc, Options{}).Configs[0]
	if c.Matched != 3 {
		t.Fatalf("%d of 3 served", c.Matched)
	}
	// Served at the first pass after the relax: within a tick of it.
	if c.WaitP50 < 20 || c.WaitP99 > 20.6 {
		t.Errorf("waits p50 %vs p99 %vs, want from 20s to a tick after", c.WaitP50, c.WaitP99)
	}
}

// Without the relax the same requesters expire at their deadline, and no
// pass fails on the way.
func TestProviderRequesterExpires(t *testing.T) {
	sc := mustScenario(t, `
seed: 3
arrivals:
  list: [{at: 0s, user: a}, {at: 1s, user: b}, {at: 2s, user: c}]
providers:
  groups: [{count: 3, languages: {en: 1}}]
  session: {fixed: 1m}
requesters:
  language: {xx: 1}
configs:
  - name: strict
    queue:
      kind: provider
      acceptWindow: 0s
      deadline: 30s
`)
	c := runScenario(t, sc, Options{}).Configs[0]
	if c.Matched != 0 || c.Expired != 3 || c.PassErrors != 0 {
		t.Fatalf("%d matched, %d expired, %d pass errors: want 0, 3, 0", c.Matched, c.Expired, c.PassErrors)
	}
}

func TestProviderScenarioStrict(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"duration: 1m\narrivals: {rate: 1}\nconfigs: [{name: p, queue: {kind: provider}}]", "needs the scenario's providers"},
		{"duration: 1m\narrivals: {rate: 1}\nproviders: {groups: [{count: 1, colour: red}]}\nconfigs: [{name: p, queue: {kind: provider}}]", "colour"},
		{"duration: 1m\narrivals: {rate: 1}\nproviders: {groups: [{count: 0}]}\nconfigs: [{name: p, queue: {kind: provider}}]", "count must be"},
		{"duration: 1m\narrivals: {rate: 1}\nproviders: {count: 2, groups: [{count: 1}]}\nconfigs: [{name: p, queue: {kind: provider}}]", "not both"},
		{"duration: 1m\narrivals: {rate: 1}\nproviders: {groups: [{count: 1, shift: [9, 9]}]}\nconfigs: [{name: p, queue: {kind: provider}}]", "shift"},
		{"duration: 1m\narrivals: {rate: 1}\nproviders: {groups: [{count: 1}]}\nrequesters: {minRating: {\"7\": 1}}\nconfigs: [{name: p, queue: {kind: provider}}]", "minRating"},
	} {
		_, err := ParseScenario([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.yaml, err, tc.want)
		}
	}
}

// The table and the CSV show the provider figures, and leave empty what
// does not apply to a provider queue.
func TestProviderOutput(t *testing.T) {
	rep := runScenario(t, readScenario(t, "testdata/providers.yaml"), Options{})
	var table, csv bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"score p50", "utilisation", "declined by provider", "let pass", "score p90  utilisation"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table without %q", want)
		}
	}
	lines := strings.Split(csv.String(), "\n")
	if !strings.HasSuffix(lines[0], ",score_p50,score_p90,offers,offers_declined,offers_lapsed,utilisation") {
		t.Errorf("csv header %q", lines[0])
	}
	p := rep.Configs[0].Provider
	all := strings.Split(lines[1], ",")
	if all[1] != "all" || all[7] != "" || all[14] != "" || all[18] != n(p.Offers) || all[21] != f(p.Utilisation, 4) {
		t.Errorf("csv row %q: want empty spread and bots, offers %d, utilisation %v", lines[1], p.Offers, p.Utilisation)
	}
}

// One provider of capacity 2 and five requesters at once: two sessions at
// a time, each a minute, so the last requester waits two minutes.
func TestProviderCapacityServesInTurn(t *testing.T) {
	sc := mustScenario(t, `
seed: 4
arrivals:
  list: [{at: 0s, user: a}, {at: 0s, user: b}, {at: 0s, user: c}, {at: 0s, user: d}, {at: 0s, user: e}]
providers:
  count: 1
  capacity: 2
  session: {fixed: 1m}
configs:
  - name: one
    queue: {kind: provider, acceptWindow: 0s, deadline: 5m}
`)
	seated := 0
	c := runScenario(t, sc, Options{Played: func(_ string, m matcher.Match) {
		if m.Provider != nil && m.Provider.UserID == "g0-0" && len(m.Players) == 1 {
			seated++
		}
	}}).Configs[0]
	if seated != 5 {
		t.Errorf("%d sessions told to Played, want 5 with provider g0-0", seated)
	}
	if c.Matched != 5 || c.Provider.OverCapacity != 0 || c.Provider.SessionsEnded < 4 {
		t.Fatalf("%d served, %d over capacity, %d sessions ended", c.Matched, c.Provider.OverCapacity, c.Provider.SessionsEnded)
	}
	// Waits 0, 0, 1m, 1m, 2m (each plus a wake): p50 is the third.
	if c.WaitP50 < 60 || c.WaitP50 > 61 || c.WaitP99 < 120 || c.WaitP99 > 121 {
		t.Errorf("waits p50 %vs p99 %vs, want about 60s and 120s", c.WaitP50, c.WaitP99)
	}
}

// Providers whose shift begins at 01:00 serve a requester who joined
// before it at 01:00.
func TestProviderShift(t *testing.T) {
	sc := mustScenario(t, `
seed: 4
arrivals:
  list: [{at: 59m50s, user: a}]
providers:
  groups: [{count: 2, shift: [1, 3]}]
configs:
  - name: late
    queue: {kind: provider, acceptWindow: 0s, deadline: 5m}
`)
	c := runScenario(t, sc, Options{}).Configs[0]
	if c.Matched != 1 || c.WaitP50 < 10 || c.WaitP50 > 11 {
		t.Errorf("%d served, wait %vs, want 1 after about 10s", c.Matched, c.WaitP50)
	}
}

// A skill queue beside a provider queue: its provider figures are empty,
// the provider queue's spread is.
func TestProviderBesideSkillQueue(t *testing.T) {
	sc := mustScenario(t, `
seed: 9
duration: 2m
arrivals: {rate: 2}
skill: {mean: 1500, sd: 200}
providers:
  groups: [{count: 20, capacity: 2}]
  session: {fixed: 30s}
configs:
  - name: pairs
    queue: {players: 2, deadline: 1m, window: {start: 100, step: 50, every: 5s, max: 400}}
  - name: desk
    queue: {kind: provider, deadline: 1m}
`)
	rep := runScenario(t, sc, Options{})
	if rep.Configs[0].Provider != nil || rep.Configs[1].Provider == nil {
		t.Fatal("the provider report belongs to the provider queue only")
	}
	var csv bytes.Buffer
	if err := rep.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	var pairs, desk []string
	for _, l := range strings.Split(csv.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "pairs,all,"):
			pairs = strings.Split(l, ",")
		case strings.HasPrefix(l, "desk,all,"):
			desk = strings.Split(l, ",")
		}
	}
	if len(pairs) != 22 || len(desk) != 22 {
		t.Fatalf("rows of %d and %d columns, want 22:\n%s", len(pairs), len(desk), csv.String())
	}
	if pairs[7] == "" || strings.Join(pairs[16:], "") != "" || desk[7] != "" || desk[18] == "" {
		t.Errorf("pairs %q, desk %q", pairs, desk)
	}
}

// Sessions longer than the record's forgetting horizon still end, and free
// their slot: a provider run keeps every match its sessions end against.
func TestProviderLongSessionsEnd(t *testing.T) {
	sc := mustScenario(t, `
seed: 5
arrivals:
  list: [{at: 0s, user: a}, {at: 1s, user: b}, {at: 2s, user: c}]
providers:
  count: 1
  capacity: 1
  session: {fixed: 8m}
configs:
  - name: long
    queue: {kind: provider, acceptWindow: 0s, deadline: 30m}
`)
	c := runScenario(t, sc, Options{}).Configs[0]
	if c.Matched != 3 || c.Provider.SessionsEnded < 2 || c.PassErrors != 0 {
		t.Fatalf("%d of 3 served, %d sessions ended, %d pass errors", c.Matched, c.Provider.SessionsEnded, c.PassErrors)
	}
}
