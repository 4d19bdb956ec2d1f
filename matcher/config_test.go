package matcher_test

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/ranking"
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
	if len(c.Rankings) != 1 || c.Rankings[0].Name != "trending" || c.Rankings[0].Source != ranking.SourceMatchmaking ||
		c.Rankings[0].Retention() != 48*time.Hour {
		t.Fatalf("demo boards: %+v", c.Rankings)
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

// Every key of the queue file reads back into its field, in YAML and in
// JSON (the admin API's shape), set on the queue or inherited from
// defaults: the grouping of QueueConfig by concern is invisible in the file.
func TestParseConfigEveryKey(t *testing.T) {
	points := matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 3}, {After: time.Minute, Width: 8}}}
	// Values are JSON, which is also YAML; each differs from its default.
	keys := []struct {
		key, value string
		got        func(matcher.QueueConfig) any
		want       any
	}{
		{"kind", `"room"`, func(q matcher.QueueConfig) any { return q.Kind }, matcher.KindRoom},
		{"players", `6`, func(q matcher.QueueConfig) any { return q.Players }, 6},
		{"minPlayers", `4`, func(q matcher.QueueConfig) any { return q.MinPlayers }, 4},
		{"bots", `true`, func(q matcher.QueueConfig) any { return q.Bots }, true},
		{"fallbackAfter", `"21s"`, func(q matcher.QueueConfig) any { return q.FallbackAfter }, 21 * time.Second},
		{"window", `[{"after": "0s", "width": 3}, {"after": "1m", "width": 8}]`, func(q matcher.QueueConfig) any { return *q.Window }, points},
		{"coherence", `1.5`, func(q matcher.QueueConfig) any { return q.Coherence }, 1.5},
		{"estimatedMinWidth", `9`, func(q matcher.QueueConfig) any { return q.EstimatedMinWidth }, 9.0},
		{"weights", `{"skill": 2, "activity": 0.5}`, func(q matcher.QueueConfig) any { return q.Weights }, map[string]float64{"skill": 2, "activity": 0.5}},
		{"anchorDepth", `12`, func(q matcher.QueueConfig) any { return q.AnchorDepth }, 12},
		{"scanLimit", `50`, func(q matcher.QueueConfig) any { return q.ScanLimit }, 50},
		{"deadline", `"4m"`, func(q matcher.QueueConfig) any { return q.Deadline }, 4 * time.Minute},
		{"tick", `"100ms"`, func(q matcher.QueueConfig) any { return q.Tick }, 100 * time.Millisecond},
		{"passGap", `"25ms"`, func(q matcher.QueueConfig) any { return q.PassGap }, 25 * time.Millisecond},
		{"heartbeatTimeout", `"40s"`, func(q matcher.QueueConfig) any { return q.HeartbeatTimeout }, 40 * time.Second},
		{"priorityCap", `"5s"`, func(q matcher.QueueConfig) any { return q.PriorityCap }, 5 * time.Second},
		{"regions", `["na", "eu"]`, func(q matcher.QueueConfig) any { return q.Regions }, []string{"eu", "na"}},
		{"adjacent", `{"eu": ["na"]}`, func(q matcher.QueueConfig) any { return q.Adjacent }, map[string][]string{"eu": {"na"}}},
		{"offerAfter", `"30s"`, func(q matcher.QueueConfig) any { return q.OfferAfter }, 30 * time.Second},
		{"acceptWindow", `"8s"`, func(q matcher.QueueConfig) any { return q.AcceptWindow }, 8 * time.Second},
		{"declineCooldown", `"-1s"`, func(q matcher.QueueConfig) any { return q.DeclineCooldown }, -time.Second},
		{"shards", `8`, func(q matcher.QueueConfig) any { return q.Shards }, 8},
		{"overflowAfter", `"25s"`, func(q matcher.QueueConfig) any { return q.OverflowAfter }, 25 * time.Second},
	}

	// The table names every key of the file: each tagged field but name,
	// the admission queue's (TestParseAdmissionQueue), the provider
	// queue's (TestProviderQueueFromTheFile) and admission, which needs a
	// second queue (TestParseAdmissionGate).
	tagged := map[string]bool{}
	admissionKeys := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(matcher.AdmissionRules{})) {
		admissionKeys[f.Tag.Get("yaml")] = true
	}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(matcher.ProviderRules{})) {
		admissionKeys[f.Tag.Get("yaml")] = true
	}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(matcher.QueueConfig{})) {
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" && tag != "name" && tag != "admission" && !admissionKeys[tag] {
			tagged[tag] = true
		}
	}
	listed := map[string]bool{}
	for _, k := range keys {
		listed[k.key] = true
	}
	if !reflect.DeepEqual(tagged, listed) {
		t.Fatalf("keys of QueueConfig %v, keys tested %v", tagged, listed)
	}

	var block, flow []string
	for _, k := range keys {
		block = append(block, "    "+k.key+": "+k.value+"\n")
		flow = append(flow, `"`+k.key+`": `+k.value)
	}
	for name, doc := range map[string]string{
		"yaml":          "queues:\n  - name: every\n" + strings.Join(block, ""),
		"json":          `{"queues": [{"name": "every", ` + strings.Join(flow, ", ") + `}]}`,
		"from defaults": "defaults:\n" + strings.ReplaceAll(strings.Join(block, ""), "    ", "  ") + "queues:\n  - name: every\n",
	} {
		c, err := matcher.ParseConfig([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		q := c.Queues[0]
		if q.Name != "every" {
			t.Errorf("%s: name %q", name, q.Name)
		}
		for _, k := range keys {
			if got := k.got(q); !reflect.DeepEqual(got, k.want) {
				t.Errorf("%s: %s: %#v, want %#v", name, k.key, got, k.want)
			}
		}
	}

	// The groups are no keys of the file, nor are the Go names; a typo is
	// refused wherever a queue is written.
	for _, key := range []string{"playrs", "seats", "Seats", "skillRules", "timing", "regionRules", "acceptRules", "sharding", "admissionRules", "Players"} {
		for _, doc := range []string{
			"queues: [{name: a, " + key + ": {players: 3}}]",
			"defaults: {" + key + ": {players: 3}}\nqueues: [{name: a}]",
		} {
			_, err := matcher.ParseConfig([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), "field "+key+" not found") {
				t.Errorf("%q: %v, want the unknown key refused", doc, err)
			}
		}
	}
}

// An admission queue takes its three keys, with their defaults, and no
// other kind does.
func TestParseAdmissionQueue(t *testing.T) {
	c, err := matcher.ParseConfig([]byte("queues:\n  - {name: launch, kind: admission, rate: 50, tokenTTL: 2m, abandonAfter: 30s}\n  - {name: surge, kind: admission, rate: 7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	q := c.Queues[0]
	if q.Rate != 50 || q.TokenTTL != 2*time.Minute || q.AbandonAfter != 30*time.Second || q.Matched() {
		t.Fatalf("launch: %+v", q.AdmissionRules)
	}
	if d := c.Queues[1].AdmissionRules; d.TokenTTL != 5*time.Minute || d.AbandonAfter != time.Minute {
		t.Fatalf("surge's defaults: %+v", d)
	}
	if len(c.Partitions()) != 0 {
		t.Fatalf("partitions %v: an admission queue is not matched", c.Partitions())
	}
	for doc, want := range map[string]string{
		"queues: [{name: a, kind: admission}]":                          "rate must be",
		"queues: [{name: a, kind: admission, rate: 2000000}]":           "rate must be",
		"queues: [{name: a, kind: admission, rate: 5, tokenTTL: 10ms}]": "at least 1s",
		"queues: [{name: a, rate: 5}]":                                  "are for kind admission",
		"queues: [{name: a, kind: lottery}]":                            "kind must be skill, room, admission or provider",
	} {
		if _, err := matcher.ParseConfig([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// A matched queue may stand behind an admission queue of the same
// configuration, named by admission, also from the defaults; a name that
// is no admission queue, or an admission queue behind another, is refused.
func TestParseAdmissionGate(t *testing.T) {
	c, err := matcher.ParseConfig([]byte(`defaults: {admission: launch}
queues:
  - {name: ranked, players: 4}
  - {name: chat, kind: room, admission: surge}
  - {name: launch, kind: admission, rate: 50}
  - {name: surge, kind: admission, rate: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"launch", "surge", "", ""} {
		if q := c.Queues[i]; q.Admission != want {
			t.Errorf("%s: admission %q, want %q", q.Name, q.Admission, want)
		}
	}
	again := c
	again.Queues = append([]matcher.QueueConfig(nil), c.Queues...)
	if err := again.Normalize(); err != nil || again.Queues[0].Admission != "launch" {
		t.Fatalf("normalized again: %v, %+v", err, again.Queues[0])
	}
	for doc, want := range map[string]string{
		"queues: [{name: a, admission: b}]":            `admission "b" names no queue`,
		"queues: [{name: a, admission: b}, {name: b}]": `admission "b" is a queue of kind skill, not admission`,
		"queues: [{name: a, admission: a}]":            `admission "a" is a queue of kind skill`,
		"queues: [{name: a, kind: admission, rate: 5, admission: b}, {name: b, kind: admission, rate: 5}]": "admission is for matched queues",
		"queues: [{name: a, admission: \"B;\"}, {name: b, kind: admission, rate: 5}]":                      "admission must name a queue of kind admission",
		"queues: [{name: a, admission: {name: b}}]":                                                        "cannot unmarshal",
	} {
		if _, err := matcher.ParseConfig([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// A queue's pass gap defaults to 5ms and may not exceed its tick.
func TestParsePassGap(t *testing.T) {
	c, err := matcher.ParseConfig([]byte("queues: [{name: a}, {name: b, tick: 20ms, passGap: 20ms}]"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := c.Queues[0].PassGap, c.Queues[1].PassGap; a != 5*time.Millisecond || b != 20*time.Millisecond {
		t.Fatalf("passGap %v and %v, want 5ms and 20ms", a, b)
	}
	for _, doc := range []string{"queues: [{name: a, tick: 20ms, passGap: 30ms}]", "queues: [{name: a, passGap: -1ms}]"} {
		if _, err := matcher.ParseConfig([]byte(doc)); err == nil || !strings.Contains(err.Error(), "passGap must be 0–tick") {
			t.Errorf("%s: %v, want passGap refused", doc, err)
		}
	}
}
