package matcher_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

func TestParseConfig(t *testing.T) {
	c, err := matcher.ParseConfig([]byte(`
defaults: {deadline: 5m, tick: 500ms, anchorDepth: 10, heartbeatTimeout: 30s}
queues:
  - name: ranked
    kind: skill
    players: 4
    regions: [eu, na]
    adjacent: {eu: [na], na: [eu]}
    offerAfter: 90s
    window: [{after: 0s, width: 5}, {after: 1m, width: 15}, {after: 3m, width: 30}]
    estimatedMinWidth: 15
    bots: true
    acceptWindow: 10s
  - name: formula
    window: {start: 50, step: 25, every: 5s, max: 400}
  - name: chat-topic-42
    kind: room
    players: 3
    minPlayers: 2
    fallbackAfter: 60s
`))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Queues[0]
	if r.Players != 4 || r.Deadline != 5*time.Minute || r.Window.Width(2*time.Minute) != 15 || !r.Bots || r.AcceptWindow != 10*time.Second {
		t.Fatalf("ranked: %+v", r)
	}
	f := c.Queues[1]
	if f.Players != 2 || f.Kind != matcher.KindSkill || f.Window.Width(10*time.Second) != 100 || f.Regions[0] != "global" {
		t.Fatalf("formula: %+v", f)
	}
	if room := c.Queues[2]; room.MinPlayers != 2 || room.FallbackAfter != time.Minute || room.Tick != 500*time.Millisecond {
		t.Fatalf("room: %+v", room)
	}
}

func TestParseConfigRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "queues: [{name: a, playrs: 3}]",
		"bad players":     "queues: [{name: a, players: 11}]",
		"bad name":        "queues: [{name: 'A B'}]",
		"bad region":      "queues: [{name: a, regions: ['e u']}]",
		"duplicate":       "queues: [{name: a}, {name: a}]",
		"no queues":       "queues: []",
		"min > players":   "queues: [{name: a, players: 2, minPlayers: 3}]",
		"window order":    "queues: [{name: a, window: [{after: 1m, width: 5}, {after: 0s, width: 9}]}]",
		"window formula":  "queues: [{name: a, window: {start: 5, stp: 1}}]",
		"unknown weight":  "queues: [{name: a, weights: {luck: 1}}]",
		"unknown kind":    "queues: [{name: a, kind: lottery}]",
		"too many shards": "queues: [{name: a, shards: 65}]",
		"adjacent self":   "queues: [{name: a, regions: [eu, na], adjacent: {eu: [eu]}}]",
		"adjacent alien":  "queues: [{name: a, regions: [eu, na], adjacent: {eu: [ap]}}]",
		"adjacent from":   "queues: [{name: a, regions: [eu, na], adjacent: {ap: [eu]}}]",
	} {
		if _, err := matcher.ParseConfig([]byte(doc)); err == nil {
			t.Errorf("%s: accepted %q", name, doc)
		} else if strings.Contains(err.Error(), "panic") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDemoConfigIsValid(t *testing.T) {
	c := matcher.DemoConfig()
	if len(c.Partitions()) < 4 {
		t.Fatalf("demo partitions: %v", c.Partitions())
	}
}

func TestParseConfigFeatures(t *testing.T) {
	c, err := matcher.ParseConfig([]byte(`
queues:
  - name: hot
    regions: [eu, na]
    adjacent: {eu: [na]}
    shards: 4
    overflowAfter: 45s
    priorityCap: 10s
    acceptWindow: 10s
    declineCooldown: 1m
    weights: {skill: 1, activity: 0.5}
  - name: plain
`))
	if err != nil {
		t.Fatal(err)
	}
	h, p := c.Queues[0], c.Queues[1]
	if h.Shards != 4 || h.OverflowAfter != 45*time.Second || h.OfferAfter != time.Minute || h.PriorityCap != 10*time.Second ||
		h.DeclineCooldown != time.Minute {
		t.Fatalf("hot: %+v", h)
	}
	if p.Shards != 1 || p.DeclineCooldown != 30*time.Second || p.OfferAfter != 0 || p.OverflowAfter != 30*time.Second || p.Sharded() {
		t.Fatalf("plain defaults: %+v", p)
	}
	if got := len(c.Partitions()); got != 2*5+1 {
		t.Fatalf("%d partitions, want 2 regions × (4 sub-pools + overflow) + 1", got)
	}
	pools := h.Pools("eu")
	if len(pools) != 5 || pools[4].String() != "hot:eu/ov" || pools[0].String() != "hot:eu/s0" {
		t.Fatalf("pools %v", pools)
	}
	seen := map[string]int{}
	for i := range 1000 {
		sp := h.PoolOf(strings.Repeat("u", 1+i%7)+string(rune('a'+i%26))+string(rune('0'+i%10)), "eu")
		if sp.Queue != "hot" || sp.Region != "eu" {
			t.Fatalf("pool %+v", sp)
		}
		seen[sp.Shard]++
	}
	if len(seen) != 4 || seen["ov"] != 0 {
		t.Fatalf("users spread over %v", seen)
	}
	if got := p.PoolOf("anyone", "global"); got.String() != "plain:global" {
		t.Fatalf("unsharded pool %v", got)
	}
}

// ValidName accepts exactly what the documented pattern does: strings of
// the letters that matter, and their neighbours, at every length around
// the limit.
func TestValidNameIsThePattern(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,47}$`)
	rng := rand.New(rand.NewPCG(5, 8))
	// Mostly the letters a name may hold, so that many strings are names.
	const valid, other = "az09_-", "AZ/.:{} \n\x00é`{"
	accepted := 0
	for range 200_000 {
		b := make([]byte, rng.IntN(52))
		for i := range b {
			if rng.IntN(50) == 0 {
				b[i] = other[rng.IntN(len(other))]
			} else {
				b[i] = valid[rng.IntN(len(valid))]
			}
		}
		if s := string(b); matcher.ValidName(s) != re.MatchString(s) {
			t.Fatalf("ValidName(%q) = %v, the pattern says %v", s, matcher.ValidName(s), re.MatchString(s))
		} else if re.MatchString(s) {
			accepted++
		}
	}
	if accepted < 20_000 {
		t.Fatalf("only %d of the strings were names: the test checks little", accepted)
	}
	for _, s := range []string{"a", "duel", "ranked-eu_2", strings.Repeat("a", 48)} {
		if !matcher.ValidName(s) {
			t.Errorf("ValidName(%q) = false", s)
		}
	}
	for _, s := range []string{"", "-a", "_a", "A", strings.Repeat("a", 49), "a\n"} {
		if matcher.ValidName(s) {
			t.Errorf("ValidName(%q) = true", s)
		}
	}
}
