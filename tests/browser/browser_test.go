// Package browser runs the JavaScript side of matchgate from go test: the
// unit tests of web/matchgate.js (node's built-in runner) and the demo page
// in a real browser (Debian's Chromium driven by playwright-core, against
// the server binary). Without node, node_modules/playwright-core or
// Chromium the tests skip and say what to install; with CI=true they fail
// instead.
package browser

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// defaultChromium is where Debian's chromium package puts the browser;
// CHROMIUM overrides it.
const defaultChromium = "/usr/bin/chromium"

const setupHint = "install with: apt-get install -y chromium nodejs npm && (cd tests/browser && npm ci)"

// require skips the test when ok is false, or fails it under CI=true, where
// a skipped browser test would hide a broken install step.
func require(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing (CI=true, so this fails instead of skipping); %s", what, setupHint)
	}
	t.Skipf("%s is missing: skipping; %s", what, setupHint)
}

func nodePath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	require(t, err == nil, "node")
	return p
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestClientUnit runs tests/browser/unit with node --test: the client's
// request ids, events, version store, reconnects and heartbeats against a
// fake WebSocket, and the client against the wire as package protocol
// renders it (protocol/testdata/wire.json).
func TestClientUnit(t *testing.T) {
	node := nodePath(t)
	// node reads these, not this process: read them here too, so that go
	// test's cache of this result ends when one of them changes.
	inputs, _ := filepath.Glob(filepath.Join("unit", "*.mjs"))
	for _, p := range append(inputs, filepath.Join("..", "..", "web", "matchgate.js"), filepath.Join("..", "..", "protocol", "testdata", "wire.json")) {
		if _, err := os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "unit/")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test unit/: %v\n%s", err, out)
	}
	t.Logf("node --test unit/:\n%s", tail(out, 12))
}

// demoQueues is the built-in demo set (matcher.DemoConfig) written out, and
// beside it an admission queue slow enough that the page is seen waiting
// before it is admitted, and a board trending fed by events that the test
// posts (the lobby's "trending now").
const demoQueues = `queues:
  - {name: duel, players: 2, bots: true, deadline: 2m, window: [{after: 0s, width: 100}, {after: 10s, width: 250}, {after: 30s, width: 600}]}
  - {name: ranked, players: 4, minPlayers: 2, regions: [eu, na], window: {start: 50, step: 25, every: 5s, max: 400}}
  - {name: chat-topic-42, kind: room, players: 3, minPlayers: 2, fallbackAfter: 60s}
  - {name: chat-pairs, kind: room, players: 2}
  - {name: advice, kind: provider, acceptWindow: 15s, weights: {specialty: 2, rating: 1, load: 1, wait: 1}, relax: [{after: 20s, drop: specialty}, {after: 60s, drop: minRating}], deadline: 3m}
  - {name: launch, kind: admission, rate: 1, tokenTTL: 2m}
rankings:
  - {name: trending, source: events, windows: [hour], metrics: {plays: {weight: 1}}, top: 10, refresh: 1s}
`

// adminToken is the server's admin token in this test, the service
// credential with which demo.mjs checks the token the page shows.
const adminToken = "browser-test-admin-token-0123456789abcdef"

// TestDemoInBrowser builds and starts the server, then runs demo.mjs: two
// pages matched together, a reload mid-wait, the lobby's depth, simulated
// players, the lobby's trending now updated live, the waiting room of an
// admission queue, a provider and a
// requester in the provider queue advice, a phone-sized viewport, no
// console errors. Screenshots are left in test-artifacts/browser/ at the
// repository root.
func TestDemoInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	node := nodePath(t)
	require(t, exists(filepath.Join("node_modules", "playwright-core", "package.json")), "tests/browser/node_modules/playwright-core")
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = defaultChromium
	}
	require(t, exists(chromium), chromium)

	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "matchgate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/matchgate")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	queues := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(queues, []byte(demoQueues), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	base := "http://" + addr
	logs := &syncBuffer{}
	server := exec.Command(bin, "serve", "--addr", addr, "--log-level", "warn", "--config", queues, "--admin-token", adminToken)
	server.Stdout, server.Stderr = logs, logs
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, server, logs) })
	waitReady(t, base, logs)

	artifacts := filepath.Join(root, "test-artifacts", "browser")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "demo.mjs")
	cmd.Env = append(os.Environ(), "MATCHGATE_URL="+base, "CHROMIUM="+chromium, "ARTIFACTS="+artifacts, "ADMIN_TOKEN="+adminToken)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("node demo.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("demo.mjs: %v\nserver log:\n%s", err, logs.String())
	}
	t.Logf("screenshots in %s", artifacts)
}

// stop interrupts the server and waits for its drain.
func stop(t *testing.T, cmd *exec.Cmd, logs *syncBuffer) {
	t.Helper()
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Errorf("server: %v", err)
		} else if err != nil {
			t.Errorf("server exited with %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("server did not stop on SIGINT\n%s", logs.String())
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(t *testing.T, base string, logs *syncBuffer) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready; log:\n%s", base, logs.String())
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// syncBuffer is a bytes.Buffer safe for the server's output and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
