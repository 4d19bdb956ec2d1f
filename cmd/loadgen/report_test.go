package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func workerReport(sockets int, joins int64, seconds float64, latencies ...time.Duration) *Report {
	h := &Histogram{}
	for _, d := range latencies {
		h.Record(d)
	}
	return &Report{
		Mode: modePlayers, Workers: 1, Sockets: sockets, Start: tm0, ConnectSeconds: 2, RunSeconds: seconds,
		Rates:    []Rate{rate("joins sent", 500, joins, seconds)},
		Latency:  map[string]*Histogram{hFound: h},
		Counters: map[string]int64{"joins_sent": joins, "connects": int64(sockets)},
		Errors:   map[string]int64{"RATE_LIMITED": 1},
		Closes:   map[string]int64{"1001": 2},
		Verified: 10,
	}
}

func TestReportMerge(t *testing.T) {
	merged := &Report{Mode: modePlayers}
	merged.Merge(workerReport(100, 5000, 10, time.Millisecond, 3*time.Millisecond))
	merged.Merge(workerReport(50, 4000, 10.5, 2*time.Millisecond))
	if merged.Workers != 2 || merged.Sockets != 150 || merged.RunSeconds != 10.5 || merged.Verified != 20 {
		t.Fatalf("merged %+v", merged)
	}
	r := merged.Rates[0]
	if r.Target != 1000 || r.Count != 9000 || r.Achieved != 9000/10.5 {
		t.Fatalf("rate %+v", r)
	}
	if merged.Counters["joins_sent"] != 9000 || merged.Errors["RATE_LIMITED"] != 2 || merged.Closes["1001"] != 4 {
		t.Fatalf("counts %v %v %v", merged.Counters, merged.Errors, merged.Closes)
	}
	if s := merged.Latency[hFound].Summary(); s.Count != 3 || s.P50 < 1.98 || s.P50 > 2.02 || s.Max != 3 {
		t.Fatalf("latency %+v", s)
	}
}

func TestReportJSONRoundTripKeepsObservations(t *testing.T) {
	rep := workerReport(10, 20, 1, time.Millisecond)
	c := cleanRun()
	rep.Observations = c.Snapshot()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again := NewChecker()
	again.Merge(back.Observations)
	if v := again.Check(); len(v) != 0 {
		t.Fatalf("violations after a round trip: %v", v)
	}
	if n, m := again.Counts(); n != 6 || m != 2 {
		t.Fatalf("counts after a round trip: %d %d", n, m)
	}
	// --json leaves the observations out.
	path := filepath.Join(t.TempDir(), "r.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	written, err := readReport(path)
	if err != nil || written.Observations != nil || written.Latency[hFound].Count() != 1 {
		t.Fatalf("written report: %+v %v", written, err)
	}
}

func TestPrintTable(t *testing.T) {
	rep := workerReport(10, 20, 1, time.Millisecond, 40*time.Millisecond)
	rep.Invariants = Invariants{Tickets: 3, Violations: 1, Details: []string{"ticket t1 is in two matches: m1 and m2"}}
	var b bytes.Buffer
	rep.PrintTable(&b)
	for _, want := range []string{"join→match.found", "joins sent", "1 VIOLATION(S)", "ticket t1 is in two matches", "RATE_LIMITED=1", "closes: 1001=2"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestDialErrorSamplesHideTokens(t *testing.T) {
	s := NewStats()
	s.sample("timeout", errors.New(`Get "http://127.0.0.1:1/v1/ws?token=eyJhbGciOi.eyJzdWIi.sig": i/o timeout`))
	s.sample("timeout", errors.New("a later one is not kept"))
	got := s.Samples()["timeout"]
	if strings.Contains(got, "eyJ") || !strings.Contains(got, "token=…") {
		t.Fatalf("sample %q", got)
	}
}
