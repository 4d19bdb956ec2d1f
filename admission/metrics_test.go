package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
)

// gathered is the value of the sample of name whose labels include every
// pair of labels, and whether there is one.
func gathered(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := admission.NewMetrics(reg)
	clk := &clock{now: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)}
	q := admission.Queue{Name: "launch", Rate: 4, TokenTTL: 10 * time.Second}
	rec, ln := m.Record(record.NewMemory()), line.NewMemory()
	svc, err := admission.NewService(admission.ServiceConfig{Queues: []admission.Queue{q}, Record: rec, Line: ln, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(admission.NewCollector(svc.Queues))
	value := func(name string, labels ...string) float64 {
		t.Helper()
		v, ok := gathered(t, reg, name, labels...)
		if !ok {
			t.Fatalf("no %s %v", name, labels)
		}
		return v
	}

	for _, u := range []string{"u1", "u2", "u3", "u4", "u5", "u6"} {
		if _, _, err := svc.Enter(ctx, q.Name, u); err != nil {
			t.Fatal(err)
		}
	}
	if v := value("matchgate_admission_waiting", "queue", "launch"); v != 6 {
		t.Fatalf("waiting %v, want 6", v)
	}
	if _, ok := gathered(t, reg, "matchgate_admission_eta_error_ratio", "queue", "launch"); ok {
		t.Fatal("an ETA error before any admission")
	}

	a, err := admission.NewAdmitter(admission.AdmitterConfig{Queue: q, Record: rec, Line: ln, Owner: "a", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // takes 4, then none within the second
		if _, err := a.Step(ctx); err != nil {
			t.Fatal(err)
		}
		clk.advance(100 * time.Millisecond)
	}
	if v := value("matchgate_admission_admitted_total", "queue", "launch"); v != 4 {
		t.Fatalf("admitted %v, want 4", v)
	}
	// A retried admission of places admitted before counts nothing.
	epoch, err := rec.Epoch(ctx, q.Name)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := rec.Place(ctx, q.Name, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Admit(ctx, q.Name, epoch, []admission.Admit{{UserID: "u1", Seq: p1.Seq, Token: "retry"}}, clk.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v := value("matchgate_admission_admitted_total", "queue", "launch"); v != 4 {
		t.Fatalf("admitted %v after a retry, want 4", v)
	}

	tokens := map[string]string{}
	for _, u := range []string{"u1", "u2", "u3"} {
		pos, err := svc.Position(ctx, q.Name, u)
		if err != nil || pos.Token == "" {
			t.Fatalf("position of %s: %+v %v", u, pos, err)
		}
		tokens[u] = pos.Token
	}
	for _, call := range []func(context.Context, string, string) (admission.Place, error){svc.Claim, svc.Release, svc.Claim, svc.Consume} {
		if _, err := call(ctx, q.Name, tokens["u1"]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Claim(ctx, q.Name, tokens["u2"]); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Consume(ctx, q.Name, tokens["u3"]); err == nil { // not claimed: refused, not counted
		t.Fatal("consumed an unclaimed token")
	}
	// Past the tokens' life, the next sweep expires u2's (claimed), u3's
	// and u4's; u1's was consumed.
	clk.advance(11 * time.Second)
	if _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	for outcome, want := range map[string]float64{"claimed": 3, "released": 1, "consumed": 1, "expired": 3} {
		if v := value("matchgate_admission_tokens_total", "queue", "launch", "outcome", outcome); v != want {
			t.Errorf("tokens %s: %v, want %v", outcome, v, want)
		}
	}

	if v := value("matchgate_admission_eta_error_admissions", "queue", "launch"); v < 4 {
		t.Fatalf("ETA error measured over %v admissions, want at least 4", v)
	}
	p50 := value("matchgate_admission_eta_error_ratio", "queue", "launch", "quantile", "0.5")
	p90 := value("matchgate_admission_eta_error_ratio", "queue", "launch", "quantile", "0.9")
	if p50 < 0 || p90 < p50 {
		t.Fatalf("ETA error p50 %v p90 %v", p50, p90)
	}
	if v := value("matchgate_admission_rate_per_second", "queue", "launch"); v <= 0 {
		t.Fatalf("measured rate %v", v)
	}
}
