package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// queueSpec is one queue of the run's --config file, and what the checks
// need to know about it.
type queueSpec struct {
	Name          string
	Kind          string // skill or room
	Players       int
	MinPlayers    int
	Bots          bool
	FallbackAfter time.Duration
	// Window points as (after, width); narrow, so that many tickets reach the
	// deadline path.
	Window [][2]float64 // after in seconds, width
	Weight float64      // share of joins
}

// runQueues are the queues of a run whose deadline is d: a pairs queue
// without bots (lone tickets EXPIRE), a squad of 4 that may go short-handed
// or fill with bots at the deadline (TIMEOUT), and rooms of 3 falling back to
// 2 (FALLBACK).
func runQueues(d time.Duration) []queueSpec {
	half := d.Seconds() / 2
	return []queueSpec{
		{Name: "pairs", Kind: "skill", Players: 2, MinPlayers: 2, Window: [][2]float64{{0, 0.5}, {half, 2}}, Weight: 0.4},
		{Name: "squad", Kind: "skill", Players: 4, MinPlayers: 2, Bots: true, Window: [][2]float64{{0, 3}, {half, 10}}, Weight: 0.3},
		{Name: "rooms", Kind: "room", Players: 3, MinPlayers: 2, FallbackAfter: d / 2, Weight: 0.3},
	}
}

// skillRange is the range player skills are drawn from: wide compared with
// the windows above.
const skillMin, skillMax = 1000.0, 2000.0

// admissionSpec is the run's admission queue, gate (docs/CONFIGURATION.md):
// none when Rate is 0.
type admissionSpec struct {
	Rate                   int
	TokenTTL, AbandonAfter time.Duration
}

// queueYAML renders the --config file (README "Configuration").
func queueYAML(qs []queueSpec, adm admissionSpec, deadline, heartbeat time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "defaults: {deadline: %s, tick: 200ms, anchorDepth: 10, heartbeatTimeout: %s}\nqueues:\n", deadline, heartbeat)
	for _, q := range qs {
		fmt.Fprintf(&b, "  - name: %s\n    kind: %s\n    players: %d\n    minPlayers: %d\n", q.Name, q.Kind, q.Players, q.MinPlayers)
		if q.Bots {
			b.WriteString("    bots: true\n")
		}
		if q.FallbackAfter > 0 {
			fmt.Fprintf(&b, "    fallbackAfter: %s\n", q.FallbackAfter)
		}
		if len(q.Window) > 0 {
			b.WriteString("    window: [")
			for i, w := range q.Window {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "{after: %s, width: %g}", time.Duration(w[0]*float64(time.Second)), w[1])
			}
			b.WriteString("]\n")
		}
	}
	if adm.Rate > 0 {
		fmt.Fprintf(&b, "  - name: %s\n    kind: admission\n    rate: %d\n    tokenTTL: %s\n    abandonAfter: %s\n",
			gateQueue, adm.Rate, adm.TokenTTL, adm.AbandonAfter)
	}
	return b.String()
}

func writeQueueFile(path string, qs []queueSpec, adm admissionSpec, deadline, heartbeat time.Duration) error {
	return os.WriteFile(path, []byte(queueYAML(qs, adm, deadline, heartbeat)), 0o644)
}
