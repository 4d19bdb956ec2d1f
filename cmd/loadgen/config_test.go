package main

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseQueues(t *testing.T) {
	got, err := parseQueues("duel=3, ranked:eu=1")
	if err != nil {
		t.Fatal(err)
	}
	want := []QueueChoice{{Queue: "duel", Weight: 0.75}, {Queue: "ranked", Region: "eu", Weight: 0.25}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{"", "duel=0", "duel=x", ":eu=1"} {
		if _, err := parseQueues(bad); err == nil {
			t.Errorf("parseQueues(%q) accepted", bad)
		}
	}
}

func TestParseSources(t *testing.T) {
	cases := map[string][]string{
		"3":                   {"127.0.0.1", "127.0.0.2", "127.0.0.3"},
		"127.0.0.9,127.0.0.7": {"127.0.0.9", "127.0.0.7"},
	}
	for in, want := range cases {
		if got, err := parseSources(in, 10); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseSources(%q) = %v, %v", in, got, err)
		}
	}
	if got, _ := parseSources("auto", 100_000); len(got) != 4 {
		t.Errorf("auto for 100k sockets: %v", got)
	}
	if got, _ := parseSources("auto", 10); len(got) != 1 {
		t.Errorf("auto for 10 sockets: %v", got)
	}
	if _, err := parseSources("0", 10); err == nil {
		t.Error("a count of 0 accepted")
	}
}

func TestParseURLsAndLoopback(t *testing.T) {
	got, err := parseURLs("ws://127.0.0.1:8080/v1/ws, http://localhost:9000/")
	if err != nil || !reflect.DeepEqual(got, []string{"http://127.0.0.1:8080", "http://localhost:9000"}) {
		t.Fatalf("parseURLs: %v %v", got, err)
	}
	for _, ok := range []string{"http://127.0.0.1:1", "http://127.0.0.5:1", "http://localhost:1", "http://[::1]:1"} {
		if err := requireLoopback(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:1", "http://example.com", "redis://192.168.1.1:6379/0"} {
		if err := requireLoopback(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestParseConfigValidates(t *testing.T) {
	cfg, _, err := parseConfig([]string{"--secret", "0123456789abcdef", "--sockets", "30000", "--duration", "1m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.SourceAddrs) != 2 || cfg.Duration != time.Minute || cfg.Queues[0].Queue != "duel" {
		t.Fatalf("config %+v", cfg)
	}
	var stderr bytes.Buffer
	for _, args := range [][]string{
		{"--sockets", "10"}, // no token source
		{"--secret", "short"},
		{"--secret", "0123456789abcdef", "--mode", "nope"},
		{"--secret", "0123456789abcdef", "--cancel-fraction", "1.5"},
		{"--secret", "0123456789abcdef", "--accept-fraction", "0.7", "--decline-fraction", "0.5"},
		{"--secret", "0123456789abcdef", "--per-process", "25000"},
	} {
		if _, _, err := parseConfig(args, &stderr); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestWorkerShares(t *testing.T) {
	f := &workerFleet{cfg: Config{Sockets: 100_001, RestPlayers: 3, ConnectRate: 3000, JoinRate: 600, Verify: 200,
		SourceAddrs: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, Seed: 5}, count: 6}
	total, rest := 0, 0
	for i := range 6 {
		c := f.workerConfig(i)
		total += c.Sockets
		rest += c.RestPlayers
		if c.ConnectRate != 500 || c.JoinRate != 100 || c.WorkerIndex != i+1 || c.Sockets > 19_500 {
			t.Fatalf("worker %d: %+v", i, c)
		}
		if c.SourceAddrs[0] != f.cfg.SourceAddrs[i%3] || len(c.SourceAddrs) != 3 {
			t.Fatalf("worker %d sources %v", i, c.SourceAddrs)
		}
	}
	if total != 100_001 || rest != 3 {
		t.Fatalf("shares add up to %d sockets, %d REST players", total, rest)
	}
}

func TestPrefixWriter(t *testing.T) {
	var b bytes.Buffer
	w := &prefixWriter{w: &b, prefix: "[w1] "}
	_, _ = io.WriteString(w, "one\ntw")
	_, _ = io.WriteString(w, "o\nthree\n")
	if got := b.String(); got != "[w1] one\n[w1] two\n[w1] three\n" {
		t.Fatalf("%q", got)
	}
	if strings.Count(b.String(), "[w1]") != 3 {
		t.Fatal("prefix count")
	}
}
