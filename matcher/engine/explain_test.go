package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// While a ticket waits, GET says why: its window, the candidates in it, and
// what is missing; with recent real waits, the queue's estimated wait.
func TestExplain(t *testing.T) {
	q := matcher.QueueConfig{
		Name:       "trio",
		Seats:      matcher.Seats{Players: 3},
		SkillRules: matcher.SkillRules{Coherence: 1, Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 10}, {After: time.Minute, Width: 20}}}},
	}
	h := newHarness(t, q)
	ctx := context.Background()
	explain := func(user, id string) *matcher.Explain {
		t.Helper()
		v, err := h.svc.Ticket(ctx, user, id)
		if err != nil {
			t.Fatal(err)
		}
		return v.Explain
	}

	a := h.join("ana", 100)
	h.advance(2 * time.Second)
	x := explain("ana", a.ID)
	if x == nil || *x.Window != 10 || x.CandidatesInWindow != 0 || x.PlayersNeeded != 2 || x.Missing != matcher.MissingPlayers ||
		x.Waited != 2 || x.EstimatedWait != nil {
		t.Fatalf("alone: %+v", x)
	}
	// Two in the window, but 18 apart: no coherent group under coherence 1.
	h.join("bea", 91)
	h.join("cal", 109)
	h.join("far", 300) // outside every window
	h.tick()
	x = explain("ana", a.ID)
	if x.CandidatesInWindow != 2 || x.PlayersNeeded != 0 || x.Missing != matcher.MissingCoherence {
		t.Fatalf("incoherent: %+v", x)
	}
	// A minute later the window is 20.
	h.advance(time.Minute)
	if x := explain("ana", a.ID); *x.Window != 20 {
		t.Fatalf("window after a minute: %v", *x.Window)
	}
	b, _ := json.Marshal(matcher.TicketView{Ticket: a, Explain: x})
	for _, f := range []string{`"explain":`, `"window":10`, `"candidatesInWindow":2`, `"missing":"coherent_group"`, `"estimatedWait":null`} {
		if !strings.Contains(string(b), f) {
			t.Fatalf("wire %s lacks %s", b, f)
		}
	}
	// A resolved ticket has no explanation.
	done := h.join("dot", 100)
	if _, err := h.svc.Cancel(ctx, "dot", done.ID); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.svc.Ticket(ctx, "dot", done.ID); v.Explain != nil {
		t.Fatalf("explain of a cancelled ticket: %+v", v.Explain)
	}
}

// Recent real waits feed GET /v1/queues and the estimate in explain.
func TestQueueStatistics(t *testing.T) {
	q := matcher.QueueConfig{
		Name:       "duel",
		Seats:      matcher.Seats{Players: 2},
		SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 5}}}},
		Timing:     matcher.Timing{Deadline: time.Minute},
	}
	h := newHarness(t, q)
	ctx := context.Background()
	// Ten pairs, the i-th waiting i seconds (1..10) before its partner comes.
	for i := 1; i <= 10; i++ {
		h.join("a"+string(rune('a'+i)), float64(1000*i))
		h.advance(time.Duration(i) * time.Second)
		h.join("b"+string(rune('a'+i)), float64(1000*i))
		h.tick()
	}
	// One expires alone after its minute.
	lone := h.join("lone", 99999)
	h.advance(time.Minute)
	h.tick()
	if st := h.ticket(lone.ID).Status; st != matcher.StatusExpired {
		t.Fatalf("lone is %s", st)
	}
	qs, err := h.svc.Queues(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatalf("queues = %+v, %v", qs, err)
	}
	st := qs[0].QueueStats
	// 21 resolved tickets: waits 1..10 s (the first of each pair), 0 s
	// (ten partners) and 60 s (expired).
	if st.Samples != 21 || st.Wait == nil {
		t.Fatalf("stats %+v", st)
	}
	if st.Wait.P50 != 1 || st.Wait.P90 != 9 || st.Wait.P99 != 60 {
		t.Fatalf("percentiles %+v, want p50 1, p90 9, p99 60", *st.Wait)
	}
	if got, want := st.TimeoutFraction, 1.0/21; got != want {
		t.Fatalf("timeout fraction %v, want %v", got, want)
	}
	// The pairs formed within the last 5 minutes (55 s + the lone minute).
	if st.MatchesPerMinute != 2 {
		t.Fatalf("matches per minute %v, want 10 in 5 min = 2", st.MatchesPerMinute)
	}
	if st.EstimatedWait == nil || *st.EstimatedWait != 1 {
		t.Fatalf("estimated wait %v", st.EstimatedWait)
	}
	b, _ := json.Marshal(qs[0])
	for _, f := range []string{`"matchesPerMinute":2`, `"wait":{"p50":1,"p90":9,"p99":60}`, `"timeoutFraction":`, `"depth":{"global":0}`} {
		if !strings.Contains(string(b), f) {
			t.Fatalf("wire %s lacks %s", b, f)
		}
	}
	w := h.join("new", 5)
	v, _ := h.svc.Ticket(ctx, "new", w.ID)
	if v.Explain == nil || v.Explain.EstimatedWait == nil || *v.Explain.EstimatedWait != 1 {
		t.Fatalf("explain estimate %+v", v.Explain)
	}
	// An hour later nothing recent is left.
	h.advance(2 * time.Hour)
	qs, _ = h.svc.Queues(ctx)
	if qs[0].Samples != 0 || qs[0].Wait != nil || qs[0].MatchesPerMinute != 0 {
		t.Fatalf("stale stats %+v", qs[0].QueueStats)
	}
}
