package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const e2eSecret = "loadgen-test-secret-0123456789"

// server is the matchgate binary, built once for the tests that need it.
var server struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.dir != "" {
		_ = os.RemoveAll(server.dir)
	}
	os.Exit(code)
}

// startServer builds cmd/matchgate (once) and runs it in its embedded
// default (in-process Redis, in-memory record) on a free loopback port. It
// returns the base URL and the process id; the process is interrupted when
// the test ends. args are added to the serve flags.
func startServer(t *testing.T, args ...string) (string, int) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	server.once.Do(func() {
		server.dir, server.err = os.MkdirTemp("", "loadgen-test-")
		if server.err != nil {
			return
		}
		server.bin = filepath.Join(server.dir, "matchgate")
		out, err := exec.Command("go", "build", "-o", server.bin, "github.com/matchgate/matchgate/cmd/matchgate").CombinedOutput()
		if err != nil {
			server.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if server.err != nil {
		t.Fatal(server.err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(server.bin, append([]string{"serve", "--addr", addr, "--secret", e2eSecret, "--log-level", "warn"}, args...)...)
	cmd.Stderr = &syncWriter{w: &logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, cmd.Process.Pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestRunAgainstEmbeddedServer drives 50 sockets and 5 REST players with
// cancels and reconnects for about two seconds and expects matches, every
// behaviour exercised, and no violation.
func TestRunAgainstEmbeddedServer(t *testing.T) {
	base, _ := startServer(t)
	rep, stdout := runExercising(t, []string{"joined", "match_found", "cancelled", "reconnects", "pongs", "rest_polls"},
		"--url", base, "--sockets", "50", "--connect-rate", "500",
		"--rest-players", "5", "--poll-interval", "50ms", "--heartbeat-interval", "100ms",
		"--join-rate", "150", "--duration", "1500ms", "--drain", "1s", "--progress", "500ms",
		"--cancel-fraction", "0.2", "--cancel-after", "20ms", "--reconnect-fraction", "0.2", "--reconnect-after", "20ms",
		"--ping-interval", "500ms", "--skill-stddev", "20", "--seed", "42")
	c := rep.Counters
	if c["connects"]-c["reconnects"] != 50 || c["connect_failed"] != 0 {
		t.Errorf("connects %d (reconnects %d), failed %d", c["connects"], c["reconnects"], c["connect_failed"])
	}
	if rep.Invariants.Violations != 0 || rep.Invariants.Verified == 0 || rep.Invariants.Matches == 0 {
		t.Errorf("invariants %+v", rep.Invariants)
	}
	if rep.Latency[hFound].Count() == 0 || !strings.Contains(stdout, "join→match.found") {
		t.Errorf("no join→match.found figures:\n%s", stdout)
	}
}

// runExercising runs loadgen with args (and the test secret), expects exit
// 0, and that every counter of exercised is above zero; it returns the
// report and the printed table.
func runExercising(t *testing.T, exercised []string, args ...string) (*Report, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(args, "--secret", e2eSecret, "--json", out), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	rep, err := readReport(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counters: %v", rep.Counters)
	for _, k := range exercised {
		if rep.Counters[k] == 0 {
			t.Errorf("%s = 0: that behaviour was not exercised\n%s", k, stdout.String())
		}
	}
	return rep, stdout.String()
}

// TestRunWithAcceptWindow: on a queue with an accept window, players accept,
// decline or stay silent; dissolved matches send their accepters back to
// the queue to be matched again, and the run ends with no violation. A
// player refused COOLDOWN rests for the retry-after it was told: refused
// once per cooldown, not at every turn of the join pacer.
func TestRunWithAcceptWindow(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  - name: duel\n    players: 2\n    acceptWindow: 300ms\n    declineCooldown: 5s\n"+
		"    window:\n      - {after: 0s, width: 100000}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startServer(t, "--config", cfg)
	rep, stdout := runExercising(t, []string{"match_found", "accepts", "declines", "silent", "ready", "dissolved"},
		"--url", base, "--sockets", "40", "--connect-rate", "500",
		"--join-rate", "60", "--duration", "2s", "--drain", "2s", "--progress", "1s",
		"--accept-fraction", "0.6", "--decline-fraction", "0.2", "--seed", "7")
	if rep.Invariants.Violations != 0 || rep.Invariants.Matches == 0 {
		t.Errorf("invariants %+v\n%s", rep.Invariants, stdout)
	}
	c := rep.Counters
	if cooled := rep.Errors["COOLDOWN"]; cooled == 0 || cooled > c["declines"]+c["silent"] {
		t.Errorf("%d joins refused COOLDOWN for %d declines and %d silent players: want at most one each\n%s",
			cooled, c["declines"], c["silent"], stdout)
	}
}

// TestIdleModeReadsServerMemory holds a few idle sockets and reads the
// server's RSS and /metrics around them.
func TestIdleModeReadsServerMemory(t *testing.T) {
	base, pid := startServer(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"--mode", "idle", "--url", base, "--secret", e2eSecret, "--sockets", "20", "--connect-rate", "1000",
		"--duration", "1200ms", "--settle", "100ms", "--server-pid", itoa(int64(pid)),
	}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "KiB per socket") || !strings.Contains(stdout.String(), "server goroutines") {
		t.Fatalf("no memory line:\n%s", stdout.String())
	}
}

// TestRefusesRemoteTargets: only loopback unless told otherwise.
func TestRefusesRemoteTargets(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--url", "http://10.1.2.3:8080", "--secret", e2eSecret}, &stdout, &stderr); code != exitError {
		t.Fatalf("exit %d for a remote target", code)
	}
	if !strings.Contains(stderr.String(), "not a loopback address") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

// TestProvidersMode drives a provider queue whose constraints relax at
// once (every requester can be served) with 20 providers and 60
// requesters, some providers dropping their sockets and answering on
// reconnect the offers pushed meanwhile, and expects every requester
// served, the figures reported, no violation, and the JSON written.
func TestProvidersMode(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - name: advice
    kind: provider
    acceptWindow: 3s
    relax: [{after: 0s, drop: language}, {after: 0s, drop: sessionType}, {after: 0s, drop: minRating}, {after: 0s, drop: specialty}]
    tick: 100ms
`), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startServer(t, "--config", cfg)
	path := filepath.Join(t.TempDir(), "providers.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--mode", "providers", "--url", base, "--secret", e2eSecret,
		"--providers", "20", "--sockets", "60", "--join-rate", "60", "--session", "200ms", "--drop-fraction", "0.3",
		"--duration", "5s", "--drain", "5s", "--connect-rate", "500", "--json", path}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep providersReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Joins != 60 || rep.Matched != 60 || rep.JoinToFound.Count != 60 || rep.Ends == 0 || rep.Drops == 0 ||
		rep.OverCapacity != 0 || rep.DoubleAssigned != 0 || rep.PresenceOver != 0 || len(rep.Errors) != 0 {
		t.Fatalf("report %+v\n%s", rep, stdout.String())
	}
	if !strings.Contains(stdout.String(), "join → match.found") {
		t.Errorf("no figures printed:\n%s", stdout.String())
	}
}

// Rankings mode against the embedded server: every distinct event counted
// once, every re-sent one a duplicate, each item's count verified, reads
// answered, the server's CPU per read reported.
func TestRankingsMode(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - {name: duel, players: 2}
rankings:
  - name: products
    source: events
    metrics: {views: {weight: 1}}
    refresh: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	const admin = "loadgen-rankings-admin-token-0123456789"
	base, pid := startServer(t, "--config", cfg, "--admin-token", admin)
	path := filepath.Join(t.TempDir(), "rankings.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--mode", "rankings", "--url", base, "--secret", e2eSecret,
		"--admin-token", admin, "--events", "5000", "--event-batch", "250", "--dup-fraction", "0.1", "--ranking-items", "20",
		"--read-rate", "200", "--duration", "1s", "--readers", "50", "--verify-wait", "20s",
		"--server-pid", strconv.Itoa(pid), "--json", path}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Sent, DupsSent, Accepted, Duplicates, Reads int64
		Errors                                      map[string]int64
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Accepted != 5000 || rep.DupsSent == 0 || rep.Duplicates != rep.DupsSent || rep.Sent != 5000+rep.DupsSent ||
		rep.Reads != 200 || len(rep.Errors) != 0 {
		t.Fatalf("report %+v\n%s", rep, stdout.String())
	}
	for _, want := range []string{"verified: each of the 20 items", "GET top (from due)", "ms per read"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("no %q in the report:\n%s", want, stdout.String())
		}
	}
}
