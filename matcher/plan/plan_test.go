package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// The planners are pure: these tests give them reads and a time and look
// at the groups, with no pool, record or clock behind them.

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func planQueue(t *testing.T, q matcher.QueueConfig) *matcher.QueueConfig {
	t.Helper()
	c := matcher.Config{Queues: []matcher.QueueConfig{q}}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	return &c.Queues[0]
}

func entry(id string, skill float64, waited time.Duration) matcher.Entry {
	return matcher.Entry{TicketID: id, UserID: "u-" + id, Skill: skill, Enqueue: t0.Add(-waited), Deadline: t0.Add(time.Hour)}
}

func noneUsed(string) bool { return false }

func ids(g Group) string {
	s := ""
	for i, e := range g.Entries {
		if i > 0 {
			s += ","
		}
		s += e.TicketID
	}
	return s
}

func TestSkillPlannerWindowAndWaitOrder(t *testing.T) {
	q := planQueue(t, matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}, {After: 10 * time.Second, Width: 300}}}}})
	// a waited 10 s (window 300): b at +250 is in it, c at +50 too but
	// younger; the oldest candidate wins. d alone at 5000 finds nobody.
	a, b, c, d := entry("a", 1000, 10*time.Second), entry("b", 1250, 8*time.Second), entry("c", 1050, 1*time.Second), entry("d", 5000, 9*time.Second)
	anchors := []matcher.Entry{a, b, d, c}
	plan := PlannerOf(q).Choose(q, Round{Anchors: anchors, Whole: true, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 1 || ids(plan.Groups[0]) != "a,b" || plan.Groups[0].FormedBy != matcher.FormedFilled {
		t.Fatalf("groups %+v, want one FILLED a,b", plan.Groups)
	}
	// Tried: a, d and c (b was taken by a); full: a.
	if plan.Tried != 3 || plan.Full != 1 {
		t.Fatalf("tried %d full %d, want 3 and 1", plan.Tried, plan.Full)
	}
	// At the start of the waits (window 100 for a), b is out of reach and
	// a pairs with c.
	young := []matcher.Entry{entry("a", 1000, 0), entry("b", 1250, 0), entry("c", 1050, 0)}
	young[2].Enqueue = t0.Add(time.Millisecond)
	plan = PlannerOf(q).Choose(q, Round{Anchors: young, Whole: true, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 1 || ids(plan.Groups[0]) != "a,c" {
		t.Fatalf("groups %+v, want a,c", plan.Groups)
	}
}

func TestSkillPlannerUsedAndSameUser(t *testing.T) {
	q := planQueue(t, matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 1000}}}}})
	a, b, c := entry("a", 1000, 3*time.Second), entry("b", 1000, 2*time.Second), entry("c", 1000, time.Second)
	b.UserID = a.UserID // one user never meets themself
	used := func(id string) bool { return id == "c" }
	plan := PlannerOf(q).Choose(q, Round{Anchors: []matcher.Entry{a, b, c}, Whole: true, Used: used, Now: t0})
	if len(plan.Groups) != 0 {
		t.Fatalf("groups %+v, want none", plan.Groups)
	}
	// An entry read without its fields is never chosen.
	bare := matcher.Entry{TicketID: "x", Skill: 1000, Enqueue: t0}
	plan = PlannerOf(q).Choose(q, Round{Anchors: []matcher.Entry{a, bare}, Whole: true, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 0 {
		t.Fatalf("groups %+v, want none", plan.Groups)
	}
}

func TestSkillPlannerCoherence(t *testing.T) {
	q := planQueue(t, matcher.QueueConfig{Name: "four", Seats: matcher.Seats{Players: 3}, SkillRules: matcher.SkillRules{Coherence: 1, Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}}})
	// b (−100) and c (+100) are each within a's window but 200 apart: with
	// coherence 1 they never share a group.
	a, b, c := entry("a", 1000, 3*time.Second), entry("b", 900, 2*time.Second), entry("c", 1100, time.Second)
	plan := PlannerOf(q).Choose(q, Round{Anchors: []matcher.Entry{a, b, c}, Whole: true, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 0 {
		t.Fatalf("groups %+v, want none", plan.Groups)
	}
	q.Coherence = 2
	plan = PlannerOf(q).Choose(q, Round{Anchors: []matcher.Entry{a, b, c}, Whole: true, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 1 || ids(plan.Groups[0]) != "a,b,c" {
		t.Fatalf("groups %+v, want a,b,c", plan.Groups)
	}
}

func TestSkillPlannerReadsNearWhenNotWhole(t *testing.T) {
	q := planQueue(t, matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}}})
	a, b := entry("a", 1000, 3*time.Second), entry("b", 1010, time.Second)
	// Not the whole pool: a's candidates are what was read near it, not
	// the other anchors.
	plan := PlannerOf(q).Choose(q, Round{Anchors: []matcher.Entry{a}, Near: [][]matcher.Entry{{a, b}}, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 1 || ids(plan.Groups[0]) != "a,b" {
		t.Fatalf("groups %+v, want a,b", plan.Groups)
	}
	plan = PlannerOf(q).Choose(q, Round{Anchors: []matcher.Entry{a, b}, Near: [][]matcher.Entry{{a}, {b}}, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 0 {
		t.Fatalf("groups %+v, want none: nobody was read near either", plan.Groups)
	}
}

func TestSkillPlannerOffersFirstAndHostedHere(t *testing.T) {
	q := planQueue(t, matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}}})
	own1, own2 := entry("o1", 1000, 5*time.Second), entry("o2", 1000, 4*time.Second)
	mine := entry("m", 3000, time.Second)
	off1, off2 := entry("x1", 3000, 9*time.Second), entry("x2", 5000, 8*time.Second)
	off3 := entry("x3", 5000, 7*time.Second)
	for _, o := range []*matcher.Entry{&off1, &off2, &off3} {
		o.Home = "duel:na"
	}
	plan := PlannerOf(q).Choose(q, Round{
		Anchors: []matcher.Entry{own1, own2, mine}, Near: [][]matcher.Entry{{own1, own2}, {own1, own2}, {mine}},
		Offered: []matcher.Entry{off1, off2, off3}, OfferedNear: [][]matcher.Entry{{mine}, nil, nil},
		Used: noneUsed, Now: t0,
	})
	// x1 (the oldest) anchors with m, and that group comes first; x2 and x3
	// would pair but seat nobody from here; o1,o2 after.
	got := []string{}
	for _, g := range plan.Groups {
		got = append(got, fmt.Sprintf("%s/%v", ids(g), g.Crosses()))
	}
	if fmt.Sprint(got) != "[x1,m/true o1,o2/false]" {
		t.Fatalf("groups %v", got)
	}
}

func TestRoomPlanner(t *testing.T) {
	q := planQueue(t, matcher.QueueConfig{Name: "room", Kind: matcher.KindRoom, Seats: matcher.Seats{Players: 3, MinPlayers: 2, FallbackAfter: time.Minute}})
	var es []matcher.Entry
	for i := range 5 {
		es = append(es, entry(fmt.Sprint(i), 0, time.Duration(50-i)*time.Second))
	}
	plan := PlannerOf(q).Choose(q, Round{Anchors: es, Used: noneUsed, Now: t0})
	if len(plan.Groups) != 1 || ids(plan.Groups[0]) != "0,1,2" || plan.Tried != 0 {
		t.Fatalf("groups %+v, want one room 0,1,2 and no read-on", plan.Groups)
	}
	// Ten more seconds: the oldest of the two left waited a minute.
	plan = PlannerOf(q).Choose(q, Round{Anchors: es, Used: noneUsed, Now: t0.Add(13 * time.Second)})
	if len(plan.Groups) != 2 || ids(plan.Groups[1]) != "3,4" || plan.Groups[1].FormedBy != matcher.FormedFallback {
		t.Fatalf("groups %+v, want a FALLBACK room 3,4 after the full one", plan.Groups)
	}
	if r, w := PlannerOf(q).Explain(q, es[0], t0); r.Kind != ReadSize || w != nil {
		t.Fatalf("room explain read %+v window %v", r, w)
	}
}

func TestTimeoutPlans(t *testing.T) {
	d := entry("d", 1000, time.Minute)
	others := []matcher.Entry{d, entry("a", 1200, 0), entry("b", 800, 0)}
	for _, tc := range []struct {
		q       matcher.QueueConfig
		want    string
		bots    int
		expires bool
	}{
		{matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 4, Bots: true}}, "d,a,b", 1, false},
		{matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 4, MinPlayers: 3}}, "d,a,b", 0, false},
		{matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 4, MinPlayers: 4}}, "", 0, true},
		{matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}}, "d,a", 0, false},
	} {
		q := planQueue(t, tc.q)
		g, ok := PlannerOf(q).Timeout(q, d, others, noneUsed)
		if ok == tc.expires || ids(g) != tc.want || g.Bots != tc.bots || (ok && g.FormedBy != matcher.FormedTimeout) {
			t.Fatalf("%+v: group %q bots %d ok %v", tc.q, ids(g), g.Bots, ok)
		}
	}
}

func TestExplainUsesTheEnginesWindow(t *testing.T) {
	q := planQueue(t, matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{EstimatedMinWidth: 500, Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}, {After: 10 * time.Second, Width: 300}}}}})
	e := entry("e", 1000, 10*time.Second)
	r, w := PlannerOf(q).Explain(q, e, t0)
	if w == nil || *w != Width(q, e, t0) || *w != 300 || r.Lo != 700 || r.Hi != 1300 {
		t.Fatalf("read %+v window %v, want ±300", r, w)
	}
	e.Estimated = true
	if _, w := PlannerOf(q).Explain(q, e, t0); *w != 500 {
		t.Fatalf("estimated window %v, want 500", *w)
	}
	if !PlannerOf(q).InWindow(q, e, entry("c", 1499, 0), t0) || PlannerOf(q).InWindow(q, e, entry("c", 1501, 0), t0) {
		t.Fatal("InWindow disagrees with the window")
	}
}
