package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// BenchmarkSkillChoose is a pass's round of pairs as the engine reads it:
// 64 anchors and each one's 8 nearest, a third of them within the window.
func BenchmarkSkillChoose(b *testing.B) {
	c := matcher.Config{Queues: []matcher.QueueConfig{{Name: "q", Seats: matcher.Seats{Players: 2}, SkillRules: matcher.SkillRules{ScanLimit: 8, Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}, {After: time.Minute, Width: 300}}}}}}}
	if err := c.Normalize(); err != nil {
		b.Fatal(err)
	}
	q := &c.Queues[0]
	const n = 64
	anchors := make([]matcher.Entry, n)
	for i := range anchors {
		anchors[i] = entry(fmt.Sprintf("t%03d", i), float64(i*37%n)*10, time.Duration(n-i)*time.Second)
	}
	near := make([][]matcher.Entry, n)
	for i, a := range anchors {
		near[i] = matcher.ClosestFunc(anchors, a.Skill, q.ScanLimit, nil)
	}
	r := Round{Anchors: anchors, Near: near, Used: noneUsed, Now: t0}
	p := PlannerOf(q)
	b.ReportAllocs()
	for b.Loop() {
		if plan := p.Choose(q, r); len(plan.Groups) == 0 {
			b.Fatal("no groups")
		}
	}
}
