package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPushDelaysAttributeByLinePlace: a push of rank r reflects the
// counter place − r, whichever batch arrived last; a place misjudged by a
// batch heard around the enter is corrected by the nearest counter; a
// push whose rank moved less than the gateway's step is not a batch push.
func TestPushDelaysAttributeByLinePlace(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a := &admissionRun{}
	for i, ms := range []int{0, 1000, 2000, 3000} {
		a.log.add(int64(5*i+1), at(ms)) // counters 1, 6, 11, 16
	}
	// Entered at rank 10 after the first batch: place 11.
	w := &waiter{sent: at(-50), entered: at(20), rank0: 10, pushes: []push{
		{rank: 5, at: at(1030)}, // counter 6: 30 ms
		{rank: 5, at: at(1500)}, // no move (an exact read): not a batch push
	}, ready: at(3040)} // admitted when the counter passed 11: by 16, 40 ms
	// Its push of counter 11 came before loadgen heard the batch.
	w2 := &waiter{sent: at(500), entered: at(510), rank0: 14, pushes: []push{
		{rank: 9, at: at(1100)}, // counter 6: 100 ms
		{rank: 4, at: at(1990)}, // counter 11, early
	}}
	w3 := &waiter{sent: at(500), entered: at(505), rank0: 20, pushes: []push{
		{rank: 10, at: at(2300)}, // counter 11: 300 ms
	}}
	// Answered after counter 1 (place 31), counted one more by the
	// server (32): its push of rank 16 is counter 16's, 100 ms.
	w4 := &waiter{sent: at(600), entered: at(610), rank0: 30, pushes: []push{
		{rank: 16, at: at(3100)},
		{rank: 2, at: at(3200)}, // no counter near 30: unmatched
	}}
	// Entered before every batch: its push of counter 1 is measured, but
	// batch 1, heard before the last socket entered, is not one of all.
	w5 := &waiter{sent: at(-300), entered: at(-290), rank0: 3, pushes: []push{{rank: 2, at: at(40)}}}
	a.waiters = []*waiter{w, w2, w3, nil, w4, w5}
	pf := a.pushDelays()
	if pf.moved != 6 || pf.early != 1 || pf.unmatched != 1 {
		t.Fatalf("moved %d, early %d, unmatched %d; want 6, 1, 1", pf.moved, pf.early, pf.unmatched)
	}
	// Batches 6, 11 and 16: their last socket's push 100, 300 and 100 ms after.
	if n := pf.perBatch.Count(); n != 3 {
		t.Fatalf("%d batches measured, want 3", n)
	}
	if got := pf.perBatch.Quantile(1); got < 295_000 || got > 305_000 {
		t.Errorf("worst batch %v µs, want about 300 ms", got)
	}
	if got := pf.perBatch.Quantile(0); got < 98_000 || got > 102_000 {
		t.Errorf("best batch %v µs, want about 100 ms (its last socket, not its first)", got)
	}
	if got := pf.ready.Quantile(1); pf.ready.Count() != 1 || got < 39_000 || got > 41_000 {
		t.Errorf("ready: %d, %v µs; want one, 40 ms", pf.ready.Count(), got)
	}
}

func TestParseRateChanges(t *testing.T) {
	got, err := parseRateChanges("75s=40, 2m=10")
	if err != nil || len(got) != 2 || got[0] != (RateChange{75 * time.Second, 40}) || got[1] != (RateChange{2 * time.Minute, 10}) {
		t.Fatalf("%v, %v", got, err)
	}
	for _, bad := range []string{"40", "75s=0", "x=4", "-1s=4"} {
		if _, err := parseRateChanges(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// requireRedis skips without the real Redis, or fails under CI.
func requireRedis(t *testing.T) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:6379", time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis at 127.0.0.1:6379 is required under CI: %v", err)
		}
		t.Skipf("no Redis at 127.0.0.1:6379 (admission mode hears the batches there): %v", err)
	}
	c.Close()
	return "redis://127.0.0.1:6379/0"
}

// TestAdmissionMode: REST and socket users enter a server's admission
// queue, its rate is changed through the admin API, every socket is told
// its admission, and the batch → push delays are measured.
func TestAdmissionMode(t *testing.T) {
	redisURL := requireRedis(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "queues.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  - name: launch\n    kind: admission\n    rate: 20\n    abandonAfter: 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const admin = "loadgen-test-admin-token-0123456789abcdef"
	prefix := fmt.Sprintf("lgadm%d", rand.Uint32())
	base, _ := startServer(t, "--config", cfg, "--admin-token", admin, "--redis-url", redisURL, "--redis-prefix", prefix)
	out := filepath.Join(dir, "report.json")
	var stdout, stderr bytes.Buffer
	// 50 users at 20, then 40 a second: about two seconds; --hold bounds it.
	code := run(context.Background(), []string{"--mode", "admission", "--url", base, "--secret", e2eSecret,
		"--redis-url", redisURL, "--redis-prefix", prefix, "--enters", "20", "--enter-concurrency", "4",
		"--sockets", "30", "--connect-rate", "500", "--hold", "60s", "--until-empty", "--progress", "500ms",
		"--rate-change", "500ms=40", "--admin-token", admin, "--queue-settings", `{"abandonAfter":"1h"}`,
		"--json", out}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		EntersNew, SocketsEntered, Readies int
		QueueInfo                          *admissionInfo
		BatchToPush, BatchToReady          Summary
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.EntersNew != 20 || rep.SocketsEntered != 30 || rep.Readies != 30 {
		t.Errorf("entered %d over REST and %d over sockets, %d told admitted; want 20, 30, 30\n%s",
			rep.EntersNew, rep.SocketsEntered, rep.Readies, stdout.String())
	}
	if q := rep.QueueInfo; q == nil || q.Waiting != 0 || q.Rate != 40 || q.ETAError.Admissions != 50 {
		t.Errorf("GET /v1/queues: %+v; want nobody waiting, rate 40, 50 admissions\n%s", q, stdout.String())
	}
	// The sockets' ranks move by one place and more at every batch. Every
	// admission.ready arrived (Readies above); each is timed from the batch
	// that passed its place, estimated from the entered reply and the
	// counter last heard, which can race a batch: a ready whose place came
	// out past the last counter heard is left untimed.
	if rep.BatchToPush.Count == 0 || rep.BatchToReady.Count < 25 || rep.BatchToReady.Count > 30 {
		t.Errorf("batch→push %d pushes, batch→ready %d\n%s", rep.BatchToPush.Count, rep.BatchToReady.Count, stdout.String())
	}
	if !strings.Contains(stdout.String(), "rate changed to 40/s") || strings.Contains(stdout.String(), "errors:") {
		t.Errorf("no rate change, or errors:\n%s", stdout.String())
	}
}
