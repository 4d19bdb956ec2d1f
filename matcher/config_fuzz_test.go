package matcher

import (
	"testing"
)

// FuzzParseConfig: the queue file loader never panics, and whatever it
// accepts is a valid, normalized configuration that normalizing again
// leaves valid. Its seed corpus is in testdata/fuzz/FuzzParseConfig/ and
// runs with every go test; run it for longer with
//
//	go test -run '^$' -fuzz FuzzParseConfig -fuzztime 30s ./matcher/
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"defaults: {deadline: 5m, tick: 500ms, anchorDepth: 10, heartbeatTimeout: 30s}\nqueues:\n  - name: ranked\n    kind: skill\n    players: 4\n    minPlayers: 2\n    regions: [eu, na]\n    window: [{after: 0s, width: 5}, {after: 1m, width: 15}, {after: 3m, width: 30}]\n    coherence: 2\n    estimatedMinWidth: 15\n    bots: true\n",
		"queues:\n  - name: chat-topic-42\n    kind: room\n    players: 3\n    minPlayers: 2\n    fallbackAfter: 60s\n",
		"queues:\n  - {name: q, window: {start: 50, step: 25, every: 5s, max: 400}}\n",
		"queues:\n  - {name: q, weights: {skill: 1, activity: 0.5}}\n",
		"queues: [{name: a}, {name: a}]\n",
		"queues: [{name: \"Q'; DROP TABLE tickets; --\"}]\n",
		"queues: [{name: q, regions: [\"eu\\u0000\"]}]\n",
		"queues: [{name: q, players: 99}]\n",
		"queues: &a [*a]\n",
		"{\"queues\":[{\"name\":\"json\",\"deadline\":\"2m\"}]}",
		"queues:\n  - name: q\n    window: [{after: 1m, width: 5}, {after: 0s, width: 1}]\n",
		"defaults: {admission: l}\nqueues: [{name: r}, {name: l, kind: admission, rate: 5}]\n",
		"queues: [{name: r, admission: r}]\n",
		"", "queues: []", "defaults: {players: 3}", "- a\n- b\n", "queues: [{name: q, unknown: 1}]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if len(c.Queues) == 0 {
			t.Fatal("accepted a configuration without queues")
		}
		seen := map[string]bool{}
		for i := range c.Queues {
			q := &c.Queues[i]
			if err := q.Validate(); err != nil {
				t.Fatalf("accepted an invalid queue %q: %v", q.Name, err)
			}
			if !ValidName(q.Name) || seen[q.Name] {
				t.Fatalf("accepted queue name %q", q.Name)
			}
			seen[q.Name] = true
			for _, r := range q.Regions {
				if !ValidName(r) {
					t.Fatalf("accepted region %q", r)
				}
			}
		}
		again := c
		again.Queues = append([]QueueConfig(nil), c.Queues...)
		if err := again.Normalize(); err != nil {
			t.Fatalf("normalizing an accepted configuration again: %v", err)
		}
	})
}
