package matcher

import (
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/provider"
)

func TestProviderQueueFromTheFile(t *testing.T) {
	c, err := ParseConfig([]byte(`
defaults:
  weights: {skill: 1}
queues:
  - name: advice
    kind: provider
    acceptWindow: 15s
    weights: {specialty: 2, rating: 1, load: 1, wait: 1}
    relax: [{after: 20s, drop: specialty}, {after: 60s, drop: minRating}]
    shed: [{above: 500, drop: [specialty]}]
    deadline: 3m
  - name: duel
`))
	if err != nil {
		t.Fatal(err)
	}
	q := c.Queues[0]
	if q.Players != 1 || q.MinPlayers != 1 || q.Assign != AssignBatch || q.AcceptWindow != 15*time.Second {
		t.Fatalf("advice = players %d/%d assign %q accept %v", q.Players, q.MinPlayers, q.Assign, q.AcceptWindow)
	}
	pol := q.Policy()
	want := provider.Policy{
		Weights:  map[string]float64{"specialty": 2, "rating": 1, "load": 1, "wait": 1},
		Relax:    []provider.Relax{{After: 20 * time.Second, Drop: "specialty"}, {After: time.Minute, Drop: "minRating"}},
		Shed:     []provider.Tier{{Above: 500, Drop: []string{"specialty"}}},
		Deadline: 3 * time.Minute,
	}
	if len(pol.Weights) != 4 || pol.Weights["specialty"] != 2 || len(pol.Relax) != 2 || pol.Relax[1] != want.Relax[1] ||
		len(pol.Shed) != 1 || pol.Shed[0].Above != 500 || pol.Deadline != want.Deadline {
		t.Fatalf("policy = %+v, want %+v", pol, want)
	}
	if !q.Matched() || len(c.Partitions()) != 2 {
		t.Fatalf("a provider queue is matched in its partitions: %v", c.Partitions())
	}
	if d := c.Queues[1]; d.Weights["skill"] != 1 || d.Relax != nil {
		t.Fatalf("duel = %+v", d)
	}
}

func TestProviderQueueRefusals(t *testing.T) {
	for _, tc := range []struct{ queue, want string }{
		{"{name: a, kind: provider, weights: {skill: 1}}", `unknown weight "skill"`},
		{"{name: a, kind: provider, relax: [{after: 5s, drop: mood}]}", `unknown constraint "mood"`},
		{"{name: a, kind: provider, relax: [{after: 50s, drop: specialty}, {after: 5s, drop: language}]}", "ascending after"},
		{"{name: a, kind: provider, assign: random}", "assign must be batch or greedy"},
		{"{name: a, kind: provider, bots: true}", "bots and fallbackAfter"},
		{"{name: a, kind: provider, shards: 4}", "shards and adjacent"},
		{"{name: a, kind: provider, rate: 5}", "for kind admission"},
		{"{name: a, relax: [{after: 5s, drop: language}]}", "for kind provider"},
		{"{name: a, assign: batch}", "for kind provider"},
		{"{name: a, kind: provider, relax: [{after: 5s, drop: language, extra: 1}]}", "extra"},
	} {
		_, err := ParseConfig([]byte("queues:\n  - " + tc.queue + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.queue, err, tc.want)
		}
	}
}

func TestRankingBoardsFromTheFile(t *testing.T) {
	c, err := ParseConfig([]byte(`
queues:
  - name: duel
rankings:
  - name: trending
    source: matchmaking
    metrics: {joins: {weight: 1}, matches: {weight: 3}, cancels: {weight: -1}}
    windows: [hour, day, week]
    top: 100
    carry: {top: 100, fraction: 0.1}
    refresh: 1m
  - name: products
    source: events
    metrics: {views: {weight: 1}, likes: {weight: 3}, sales: {weight: 5, transform: log1p}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rankings) != 2 || c.Rankings[0].Carry.Fraction != 0.1 || c.Rankings[1].Metrics["sales"].Transform != "log1p" ||
		c.Rankings[1].Top != 100 || len(c.Rankings[1].Windows) != 3 || c.Rankings[1].Refresh != time.Minute {
		t.Fatalf("rankings = %+v", c.Rankings)
	}
	for _, bad := range []string{
		"rankings: [{name: x, source: nowhere, metrics: {a: {weight: 1}}}]",
		"rankings: [{name: x, source: events, metrics: {a: {weight: 1, transform: sqrt}}}]",
		"rankings: [{name: x, source: events, metrics: {a: {weight: 1}}}, {name: x, source: events, metrics: {a: {weight: 1}}}]",
		"rankings: [{name: x, source: events, metrics: {a: {weight: 1}}, typo: 1}]",
	} {
		if _, err := ParseConfig([]byte("queues: [{name: duel}]\n" + bad + "\n")); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
