package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/simulate"
)

// The replay's two queues, in the queue file's syntax, for the server's
// --config and the scenario's configs alike.
const (
	replayDefaults = `{deadline: 1m}`
	replayPairs    = `{name: pairs, players: 2, window: [{after: 0s, width: 5}, {after: 1s, width: 15}]}`
	replayFour     = `{name: four, players: 4, window: [{after: 0s, width: 5}, {after: 2s, width: 60}]}`
)

// replayJoin is one join of the replayed stream.
type replayJoin struct {
	at    time.Duration
	user  string
	skill float64
}

// replayStream is 40 joins in 10 groups of four, a group every 600 ms and
// a join every 120 ms within it. Group g's skills are b, b+40, b+10, b+50
// (in that order of arrival) with b = 1000 + 300·g.
//
// The stream decides every match by itself, whatever the instant of any
// pass, so that a loaded machine cannot change the grouping:
//   - At width 5, the window of a first wait, nobody has anyone in reach
//     (the closest two skills are 10 apart), so no match forms before a
//     window widens, however soon a pass comes after a join.
//   - Widened, a window never reaches another group: the widest is ±60
//     (twice that under the default coherence), and the closest players of
//     two groups are 250 apart. Nobody waits near the 1-minute deadline,
//     so no TIMEOUT match groups players regardless of window.
//   - pairs, widened to ±15: the only two players of a group within 15 of
//     each other are b with b+10 and b+40 with b+50 (b+10 and b+40 are 30
//     apart), so each group forms those two pairs, in whichever order.
//   - four, widened to ±60: the group's four (a spread of 50) are the only
//     four in reach, so each group is one match of four.
//
// How soon after the widening the match forms (the engine's tick, a late
// request) changes its time, never its players.
func replayStream() []replayJoin {
	var js []replayJoin
	for g := range 10 {
		b := 1000 + 300*float64(g)
		for k, d := range []float64{0, 40, 10, 50} {
			js = append(js, replayJoin{
				at:    time.Duration(g)*600*time.Millisecond + time.Duration(k)*120*time.Millisecond,
				user:  fmt.Sprintf("g%dp%d", g, k),
				skill: b + d,
			})
		}
	}
	return js
}

// replayWant is the matches the stream's design decides, by queue.
func replayWant() map[string][][]string {
	want := map[string][][]string{}
	for g := range 10 {
		p := func(k int) string { return fmt.Sprintf("g%dp%d", g, k) }
		want["pairs"] = append(want["pairs"], []string{p(0), p(2)}, []string{p(1), p(3)})
		want["four"] = append(want["four"], []string{p(0), p(1), p(2), p(3)})
	}
	return normalizeMatches(want)
}

// normalizeMatches sorts each match's players and each queue's matches,
// so that two runs compare whatever order they formed in.
func normalizeMatches(ms map[string][][]string) map[string][][]string {
	for q := range ms {
		for _, m := range ms[q] {
			slices.Sort(m)
		}
		slices.SortFunc(ms[q], slices.Compare)
	}
	return ms
}

func formatMatches(ms map[string][][]string) string {
	var b strings.Builder
	for _, q := range []string{"pairs", "four"} {
		fmt.Fprintf(&b, "%s: %v\n", q, ms[q])
	}
	return b.String()
}

func equalMatches(a, b map[string][][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for q := range a {
		if !slices.EqualFunc(a[q], b[q], slices.Equal) {
			return false
		}
	}
	return true
}

// The same stream through the simulator (read as a recorded stream, as
// export-arrivals writes it) and through a real server (the embedded
// default, in real time, each player joining over REST at its offset)
// forms the same matches: the same players together in each queue.
func TestSimulateReplayMatchesServer(t *testing.T) {
	stream := replayStream()
	want := replayWant()

	// The simulator first: it seeds the process's uuid source for its run,
	// which the server must not draw from meanwhile.
	dir := t.TempDir()
	var file bytes.Buffer
	enc := json.NewEncoder(&file)
	t0 := time.Date(2026, 3, 4, 18, 0, 0, 0, time.UTC)
	for _, j := range stream {
		if err := enc.Encode(simulate.Recorded{At: t0.Add(j.at), User: j.user, Queue: "pairs", Region: "global",
			Skill: j.skill, Status: "MATCHED"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "replay.jsonl"), file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	scenario := fmt.Sprintf("seed: 1\narrivals: {file: replay.jsonl}\ndefaults: %s\nconfigs:\n  - {name: pairs, queue: %s}\n  - {name: four, queue: %s}\n",
		replayDefaults, replayPairs, replayFour)
	if err := os.WriteFile(filepath.Join(dir, "replay.yaml"), []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := simulate.ReadScenario(filepath.Join(dir, "replay.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	simulated := map[string][][]string{}
	rep, err := simulate.Run(context.Background(), sc, simulate.Options{Played: func(config string, m matcher.Match) {
		simulated[config] = append(simulated[config], m.UserIDs())
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Configs {
		if c.Joins != int64(len(stream)) || c.Matched != c.Joins {
			t.Fatalf("simulated %s: %d joins, %d matched; want all %d matched", c.Name, c.Joins, c.Matched, len(stream))
		}
	}
	normalizeMatches(simulated)
	if !equalMatches(simulated, want) {
		t.Fatalf("the simulator formed\n%swant\n%s", formatMatches(simulated), formatMatches(want))
	}

	// Then the server, with the same queues.
	queues := filepath.Join(dir, "queues.yaml")
	if err := os.WriteFile(queues, []byte(fmt.Sprintf("defaults: %s\nqueues:\n  - %s\n  - %s\n", replayDefaults, replayPairs, replayFour)), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startServer(t, "--config", queues)
	// Each queue gets its own players (one waiting ticket per user, across
	// queues), signed in before the stream starts so that sign-ins do not
	// delay the joins.
	type player struct {
		g      guest
		user   string // in the stream
		ticket string
	}
	players := map[string][]*player{}
	for _, q := range []string{"pairs", "four"} {
		for _, j := range stream {
			players[q] = append(players[q], &player{g: newGuest(t, base, j.skill), user: j.user})
		}
	}
	start := time.Now()
	for i, j := range stream {
		time.Sleep(time.Until(start.Add(j.at)))
		for _, q := range []string{"pairs", "four"} {
			p := players[q][i]
			p.ticket = replayJoinREST(t, base, q, p.g)
		}
	}
	served := map[string][][]string{}
	for _, q := range []string{"pairs", "four"} {
		streamUser := map[string]string{}
		for _, p := range players[q] {
			streamUser[p.g.UserID] = p.user
		}
		seen := map[string]bool{}
		for _, p := range players[q] {
			m := replayAwaitMatch(t, base, p.g, p.ticket)
			if seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			var users []string
			for _, u := range m.UserIDs() {
				users = append(users, streamUser[u])
			}
			served[q] = append(served[q], users)
		}
	}
	normalizeMatches(served)
	if !equalMatches(served, simulated) {
		t.Fatalf("the server formed\n%sthe simulator\n%s", formatMatches(served), formatMatches(simulated))
	}
}

// replayJoinREST joins queue as g over REST and returns the ticket's id.
func replayJoinREST(t *testing.T, base, queue string, g guest) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/queues/"+queue+"/tickets", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("join %s as %s: %d %s", queue, g.UserID, resp.StatusCode, b)
	}
	var body struct{ Ticket matcher.Ticket }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Ticket.ID
}

// replayAwaitMatch polls the ticket until it is matched (within 20 s).
func replayAwaitMatch(t *testing.T, base string, g guest, ticket string) matcher.Match {
	t.Helper()
	for range 100 {
		v := getTicket(t, base, g, ticket)
		switch {
		case v.Ticket.Status == matcher.StatusMatched && v.Match != nil:
			return *v.Match
		case v.Ticket.Status != matcher.StatusWaiting:
			t.Fatalf("ticket %s of %s ended %s (%s), not matched", ticket, g.UserID, v.Ticket.Status, v.Ticket.CancelReason)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("ticket %s of %s not matched within 20s", ticket, g.UserID)
	return matcher.Match{}
}
