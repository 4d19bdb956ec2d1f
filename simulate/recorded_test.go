package simulate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

const recordedStream = `{"at":"2026-03-04T18:30:00Z","user":"ann","queue":"duel","region":"global","skill":1500,"status":"MATCHED"}
{"at":"2026-03-04T18:30:00.25Z","user":"bob","queue":"duel","region":"global","skill":1900,"status":"MATCHED"}

{"at":"2026-03-04T18:30:01Z","user":"cat","queue":"duel","region":"global","skill":1510,"status":"CANCELLED","cancelReason":"user","cancelledAfter":"3s"}
{"at":"2026-03-04T18:30:02.5Z","user":"ann","queue":"duel","region":"global","skill":1905,"status":"MATCHED","reply":"accept"}
`

func writeRecorded(t *testing.T, dir, stream string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "arrivals.jsonl"), []byte(stream), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A recorded stream is timed from its first record, starts where the
// recording did unless the scenario says otherwise, and a player who
// joined twice is two players.
func TestSimulateRecordedStream(t *testing.T) {
	dir := t.TempDir()
	writeRecorded(t, dir, recordedStream)
	scenario := `seed: 1
arrivals: {file: arrivals.jsonl}
defaults: {players: 2, deadline: 30s}
configs: [{name: duel, queue: {window: [{after: 0s, width: 20}]}}]
`
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := ReadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Join{
		{At: 0, User: "ann", Skill: 1500, Region: "global"},
		{At: 250 * time.Millisecond, User: "bob", Skill: 1900, Region: "global"},
		{At: time.Second, User: "cat", Skill: 1510, Region: "global"},
		{At: 2500 * time.Millisecond, User: "ann~2", Skill: 1905, Region: "global"},
	}
	got := make([]Join, len(sc.Arrivals.List))
	for i, j := range sc.Arrivals.List {
		j.told = nil // what the record tells: TestSimulateRecordedBehaviour
		got[i] = j
	}
	if !slices.Equal(got, want) {
		t.Fatalf("list %+v\nwant %+v", got, want)
	}
	if s := sc.Start; !s.Equal(time.Date(2026, 3, 4, 18, 30, 0, 0, time.UTC)) || sc.Duration != 2501*time.Millisecond {
		t.Fatalf("start %v, duration %v: want the first record's instant and just past the last join", s, sc.Duration)
	}
	if err := sc.Normalize(); err != nil || len(sc.Arrivals.List) != 4 {
		t.Fatalf("a second Normalize: %v, %d joins", err, len(sc.Arrivals.List))
	}
	var played [][]string
	rep, err := Run(context.Background(), sc, Options{Played: func(_ string, m matcher.Match) {
		played = append(played, m.UserIDs())
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Configs[0]; c.Joins != 4 || c.Matched != 4 {
		t.Fatalf("%d joins, %d matched: want 4 and 4", c.Joins, c.Matched)
	}
	for _, m := range played {
		slices.Sort(m)
	}
	slices.SortFunc(played, slices.Compare)
	if want := [][]string{{"ann", "cat"}, {"ann~2", "bob"}}; !slices.EqualFunc(played, want, slices.Equal) {
		t.Fatalf("matches %v, want %v", played, want)
	}

	// With a start in the scenario, the first record joins at it.
	sc, err = ParseScenario([]byte(strings.Replace(scenario, "arrivals.jsonl", filepath.Join(dir, "arrivals.jsonl"), 1) + "start: 2026-01-01T00:00:00Z\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Start.Equal(defaultStart) || sc.Arrivals.List[3].At != 2500*time.Millisecond {
		t.Fatalf("start %v, last join at %v", sc.Start, sc.Arrivals.List[3].At)
	}
}

// What the record tells of a player wins over the scenario's draws: a
// player who cancelled cancels as long after joining, one who did not
// never does, whatever the scenario's cancel fraction.
func TestSimulateRecordedBehaviour(t *testing.T) {
	dir := t.TempDir()
	writeRecorded(t, dir, `{"at":"2026-03-04T18:30:00Z","user":"dan","queue":"q","region":"global","skill":3000,"status":"CANCELLED","cancelReason":"user","cancelledAfter":"2s"}
{"at":"2026-03-04T18:30:01Z","user":"eve","queue":"q","region":"global","skill":5000,"status":"EXPIRED"}
`)
	scenario := `seed: 1
arrivals: {file: arrivals.jsonl}
cancel: {fraction: 1, after: {fixed: 100ms}}
defaults: {players: 2, deadline: 10s}
configs: [{name: q, queue: {window: [{after: 0s, width: 20}]}}]
`
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := ReadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if tb := sc.Arrivals.List[0].told; tb == nil || tb.cancelAfter != 2*time.Second {
		t.Fatalf("dan told %+v, want a cancel after 2s", tb)
	}
	rep, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Configs[0]; c.Joins != 2 || c.Cancelled != 1 || c.Expired != 1 {
		t.Fatalf("%d joins, %d cancelled, %d expired: want 2, 1 (dan) and 1 (eve)", c.Joins, c.Cancelled, c.Expired)
	}
	if _, err := (Recorded{Reply: "maybe"}).told(); err == nil {
		t.Error("an unknown reply accepted")
	}
}

func TestSimulateRecordedStreamRefused(t *testing.T) {
	for name, c := range map[string]struct{ stream, extra, want string }{
		"out of order": {stream: `{"at":"2026-03-04T18:30:01Z","user":"a","skill":1}` + "\n" + `{"at":"2026-03-04T18:30:00Z","user":"b","skill":1}`, want: "line 2: at"},
		"no user":      {stream: `{"at":"2026-03-04T18:30:01Z","skill":1}`, want: "line 1: at and user are required"},
		"not json":     {stream: `at: 1`, want: "line 1:"},
		"empty":        {stream: "\n", want: "no joins"},
		"and a list":   {stream: `{"at":"2026-03-04T18:30:01Z","user":"a","skill":1}`, extra: ", list: [{at: 0s, user: x}]", want: "a list or a file"},
		"and a rate":   {stream: `{"at":"2026-03-04T18:30:01Z","user":"a","skill":1}`, extra: ", rate: 3", want: "a rate or a list"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeRecorded(t, dir, c.stream)
			path := filepath.Join(dir, "s.yaml")
			scenario := "arrivals: {file: arrivals.jsonl" + c.extra + "}\nconfigs: [{name: duel}]\n"
			if err := os.WriteFile(path, []byte(scenario), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadScenario(path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
