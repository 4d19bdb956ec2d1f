package matcher_test

import (
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
		"unknown field":  "queues: [{name: a, playrs: 3}]",
		"bad players":    "queues: [{name: a, players: 11}]",
		"bad name":       "queues: [{name: 'A B'}]",
		"bad region":     "queues: [{name: a, regions: ['e u']}]",
		"duplicate":      "queues: [{name: a}, {name: a}]",
		"no queues":      "queues: []",
		"min > players":  "queues: [{name: a, players: 2, minPlayers: 3}]",
		"window order":   "queues: [{name: a, window: [{after: 1m, width: 5}, {after: 0s, width: 9}]}]",
		"window formula": "queues: [{name: a, window: {start: 5, stp: 1}}]",
		"unknown weight": "queues: [{name: a, weights: {luck: 1}}]",
		"unknown kind":   "queues: [{name: a, kind: lottery}]",
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
