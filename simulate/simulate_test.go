package simulate

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

func runScenario(t *testing.T, sc *Scenario, opt Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func mustScenario(t *testing.T, doc string) *Scenario {
	t.Helper()
	sc, err := ParseScenario([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func readScenario(t *testing.T, path string) *Scenario {
	t.Helper()
	sc, err := ReadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// outputs is every rendering of a report, concatenated.
func outputs(t *testing.T, rep *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, w := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return rep.WriteJSON(b) },
		func(b *bytes.Buffer) error { return rep.WriteCSV(b) },
		func(b *bytes.Buffer) error { return rep.WriteTable(b) },
		func(b *bytes.Buffer) error { return rep.WriteSVG(b) },
	} {
		if err := w(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestSimulateDeterministic(t *testing.T) {
	read := func() *Scenario {
		sc := readScenario(t, "testdata/accept.yaml")
		sc.Duration = 2 * time.Minute // the package's tests stay quick
		return sc
	}
	first := outputs(t, runScenario(t, read(), Options{}))
	second := outputs(t, runScenario(t, read(), Options{}))
	if !bytes.Equal(first, second) {
		t.Fatalf("two runs of one seed differ:\n%s\n---\n%s", first, second)
	}
	other := read()
	other.Seed++
	if bytes.Equal(first, outputs(t, runScenario(t, other, Options{}))) {
		t.Fatal("two seeds gave the same output")
	}
}

// Every ticket ends one way, and the accept window's answers show in
// how they end.
func TestSimulateAcceptAndRooms(t *testing.T) {
	sc := readScenario(t, "testdata/accept.yaml")
	rep := runScenario(t, sc, Options{})
	for _, c := range rep.Configs {
		if c.Joins < 1000 {
			t.Fatalf("%s: %d joins, want about 2,700", c.Name, c.Joins)
		}
		ended := c.Matched + c.Cancelled + c.Declined + c.AcceptTimeout + c.Expired + c.Other
		if ended != c.Joins || c.WaitingAtEnd != 0 {
			t.Errorf("%s: %d joins, %d ended, %d left waiting", c.Name, c.Joins, ended, c.WaitingAtEnd)
		}
		if c.PassErrors != 0 || c.Other != 0 {
			t.Errorf("%s: %d pass errors, %d other cancels", c.Name, c.PassErrors, c.Other)
		}
		if c.Cancelled == 0 || c.Matches == 0 {
			t.Errorf("%s: %d cancelled, %d matches", c.Name, c.Cancelled, c.Matches)
		}
	}
	fours, rooms := rep.Configs[0], rep.Configs[1]
	if fours.Declined == 0 || fours.AcceptTimeout == 0 || fours.Dissolved == 0 {
		t.Errorf("fours: %d declined, %d silent, %d dissolved: the accept window's answers are missing",
			fours.Declined, fours.AcceptTimeout, fours.Dissolved)
	}
	if rooms.Declined != 0 || rooms.Dissolved != 0 {
		t.Errorf("rooms has no accept window, yet %d declined and %d dissolved", rooms.Declined, rooms.Dissolved)
	}
}

// The strict curve's matches are closer, the loose one's come sooner: the
// dial the simulator is for.
func TestSimulateStrictVsLoose(t *testing.T) {
	sc := readScenario(t, "testdata/windows.yaml")
	sc.Duration, sc.Arrivals.Rate = 2*time.Minute, 10 // the package's tests stay quick
	rep := runScenario(t, sc, Options{})
	strict, loose := rep.Configs[0], rep.Configs[1]
	if strict.Name != "strict" || loose.Name != "loose" {
		t.Fatalf("configs %s, %s", strict.Name, loose.Name)
	}
	if !(strict.SpreadP50 < loose.SpreadP50) || !(strict.SpreadP90 < loose.SpreadP90) {
		t.Errorf("spread p50/p90: strict %v/%v, loose %v/%v", strict.SpreadP50, strict.SpreadP90, loose.SpreadP50, loose.SpreadP90)
	}
	if !(loose.WaitP50 < strict.WaitP50) || loose.TimeoutFraction > strict.TimeoutFraction {
		t.Errorf("wait p50 strict %v loose %v; TIMEOUT strict %v loose %v", strict.WaitP50, loose.WaitP50, strict.TimeoutFraction, loose.TimeoutFraction)
	}
}

// Seed 001's worked example (A3): window 50 + 25·⌊w/5s⌋, four players.
// The first pass finds three in the anchor's window; five seconds after
// the anchor joined, the window is 75 and the four form a match of spread
// 115, leaving 1612 and 1701 waiting.
func TestSimulateWorkedExampleA3(t *testing.T) {
	sc := &Scenario{
		Seed: 1, Duration: 20 * time.Second, Wake: Wake{Off: true},
		Arrivals: Arrivals{List: []Join{
			{At: 0, User: "p9182", Skill: 1450},
			{At: time.Millisecond, User: "p7735", Skill: 1408},
			{At: 2 * time.Millisecond, User: "p4471", Skill: 1490},
			{At: 3 * time.Millisecond, User: "p6013", Skill: 1523},
			{At: 4 * time.Millisecond, User: "p2210", Skill: 1612},
			{At: 5 * time.Millisecond, User: "p8890", Skill: 1701},
		}},
		Configs: []Config{{Name: "a3", Queue: matcher.QueueConfig{
			Seats:      matcher.Seats{Players: 4},
			SkillRules: matcher.SkillRules{Window: &matcher.Window{Start: 50, Step: 25, Every: 5 * time.Second, Max: 400}},
			Timing:     matcher.Timing{Tick: 2500 * time.Millisecond, Deadline: 5 * time.Minute},
		}}},
	}
	if err := sc.Normalize(); err != nil {
		t.Fatal(err)
	}
	var played []matcher.Match
	rep := runScenario(t, sc, Options{Played: func(_ string, m matcher.Match) { played = append(played, m) }})
	if len(played) == 0 {
		t.Fatal("no match formed")
	}
	m := played[0]
	var users []string
	for _, p := range m.Players {
		users = append(users, p.UserID)
	}
	got := strings.Join(users, " ")
	for _, u := range []string{"p9182", "p7735", "p4471", "p6013"} {
		if !strings.Contains(got, u) {
			t.Errorf("match seats %s, not %s", got, u)
		}
	}
	if m.Spread != 115 || m.FormedBy != matcher.FormedFilled || !m.CreatedAt.Equal(sc.Start.Add(5*time.Second)) {
		t.Errorf("match: spread %v, formed %s at %v; want 115, FILLED, at 5s", m.Spread, m.FormedBy, m.CreatedAt.Sub(sc.Start))
	}
	// The two left expire alone at their deadline.
	if c := rep.Configs[0]; len(played) != 1 || c.Expired != 2 {
		t.Errorf("%d matches, %d expired; want 1 and 2", len(played), c.Expired)
	}
}

func TestSimulateScenarioRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "duration: 1m\narrivals: {rate: 1}\nconfigs: [{name: a, queue: {}}]\ntypo: 1\n",
		"provider":      "duration: 1m\narrivals: {rate: 1}\nconfigs: [{name: a, queue: {kind: provider}}]\n",
		"no configs":    "duration: 1m\narrivals: {rate: 1}\n",
		"bad shape":     "duration: 1m\narrivals: {rate: 1, shape: [1, 2]}\nconfigs: [{name: a, queue: {}}]\n",
		"region":        "duration: 1m\narrivals: {rate: 1}\nregions: {mars: 1}\nconfigs: [{name: a, queue: {}}]\n",
		"rate and list": "duration: 1m\narrivals: {rate: 1, list: [{at: 0s, user: a}]}\nconfigs: [{name: a, queue: {}}]\n",
	} {
		if _, err := ParseScenario([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	sc := mustScenario(t, "duration: 1m\narrivals: {rate: 1, shape: day}\nconfigs: [{name: a, queue: {}}]\n")
	sum := 0.0
	for _, v := range sc.Arrivals.Shape {
		sum += v
	}
	if sum < 23.999 || sum > 24.001 {
		t.Errorf("the day shape sums to %v, want 24 (a mean of 1)", sum)
	}
}

// The plot is well-formed XML with a line per config in each panel, and
// its points stay inside the picture.
func TestSimulateSVG(t *testing.T) {
	sc := readScenario(t, "testdata/windows.yaml")
	sc.Duration, sc.Arrivals.Rate = 3*time.Hour, 1 // three hours: three points a line
	sc.Arrivals.Shape = Shape{1, 3, 2}
	// Few passes: the package's tests stay quick.
	sc.Wake = Wake{Off: true}
	for i := range sc.Configs {
		sc.Configs[i].Queue.Tick = 5 * time.Second
	}
	rep := runScenario(t, sc, Options{})
	var b bytes.Buffer
	if err := rep.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	lines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not XML: %v\n%s", err, b.String())
		}
		el, ok := tok.(xml.StartElement)
		if !ok || el.Name.Local != "polyline" {
			continue
		}
		lines++
		for _, a := range el.Attr {
			if a.Name.Local != "points" {
				continue
			}
			pts := strings.Fields(a.Value)
			if len(pts) != 3 {
				t.Errorf("a line of %d points, want one an hour (3): %q", len(pts), a.Value)
			}
			for _, p := range pts {
				var x, y float64
				if _, err := fmt.Sscanf(p, "%g,%g", &x, &y); err != nil || x < 0 || x > svgWidth || y < 0 || y > svgHeight {
					t.Errorf("point %q outside the %dx%d picture (%v)", p, svgWidth, svgHeight, err)
				}
			}
		}
	}
	if lines != 2*len(rep.Configs) {
		t.Errorf("%d lines, want 2 panels × %d configs", lines, len(rep.Configs))
	}
}
