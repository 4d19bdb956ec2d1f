package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const simulateScenario = `seed: 3
duration: 1m
arrivals: {rate: 10}
skill: {mean: 1500, sd: 200}
defaults: {players: 2, deadline: 30s}
configs:
  - {name: strict, queue: {window: [{after: 0s, width: 5}, {after: 20s, width: 20}]}}
  - {name: loose, queue: {window: {start: 50, step: 25, every: 5s, max: 400}}}
`

func runSimulate(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"simulate"}, args...), func(string) string { return "" }, &out, &errOut, nil)
	return out.String(), errOut.String(), err
}

func TestSimulateCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(simulateScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	first, stderr, err := runSimulate(t, "--json", path)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	var rep struct {
		Configs []struct {
			Name  string `json:"name"`
			Joins int64  `json:"joins"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(first), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, first)
	}
	if len(rep.Configs) != 2 || rep.Configs[0].Name != "strict" || rep.Configs[0].Joins == 0 || rep.Configs[0].Joins != rep.Configs[1].Joins {
		t.Fatalf("configs %+v: want strict and loose on the same stream", rep.Configs)
	}
	if !strings.Contains(stderr, "joins/s") || strings.Contains(stderr, "[") {
		t.Errorf("stderr %q: want the speed, and no progress off a terminal", stderr)
	}
	// Flags after the scenario, and the same bytes again.
	again, _, err := runSimulate(t, path, "--json")
	if err != nil || again != first {
		t.Fatalf("a second run differs (err %v)", err)
	}
	other, _, err := runSimulate(t, path, "--json", "--seed", "4")
	if err != nil || other == first {
		t.Fatalf("another seed gave the same report (err %v)", err)
	}
	csv, _, err := runSimulate(t, "--csv", path)
	if err != nil || !strings.HasPrefix(csv, "config,hour,joins,matches,wait_p50_s") || !strings.Contains(csv, "\nloose,all,") {
		t.Fatalf("csv (err %v):\n%s", err, csv)
	}
	svg := filepath.Join(t.TempDir(), "plot.svg")
	table, stderr, err := runSimulate(t, "--progress", "--svg", svg, path)
	if err != nil || !strings.Contains(table, "wait p50 (s)") || !strings.Contains(stderr, "100%") {
		t.Fatalf("table (err %v):\n%s\nstderr %s", err, table, stderr)
	}
	plot, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(plot, []byte("<svg ")) || bytes.Count(plot, []byte("<polyline")) != 4 {
		t.Fatalf("svg (err %v): want two panels of two lines:\n%s", err, plot)
	}
}

func TestSimulateCommandRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(simulateScenario+"typo: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {path}, {"--json", "--csv", path}, {"a.yaml", "b.yaml"}} {
		if _, _, err := runSimulate(t, args...); err == nil {
			t.Errorf("simulate %v: accepted", args)
		}
	}
}
