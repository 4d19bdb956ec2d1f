package client_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/servertest"
)

// The tests run the real server: TestMain builds cmd/matchgate once, and
// each test starts its own `matchgate serve` (the embedded default:
// in-process Redis, memory record) on a free loopback port.

const testSecret = "client-test-secret-0123456789"

// testQueues is the queue config every server is started with: pairs
// forms a match of two at once; arena asks both to accept; launch is an
// admission queue; advice a provider queue; products a ranking board;
// lonely never matches one player, and evicts a ghost after 2s.
const testQueues = `
queues:
  - name: pairs
    players: 2
    window: [{after: 0s, width: 1000}]
  - name: arena
    players: 2
    acceptWindow: 10s
    window: [{after: 0s, width: 1000}]
  - name: lonely
    players: 3
    heartbeatTimeout: 2s
    tick: 100ms
  - {name: launch, kind: admission, rate: 20, tokenTTL: 1m}
  - name: advice
    kind: provider
    acceptWindow: 15s
    weights: {specialty: 2, rating: 1, load: 1, wait: 1}
rankings:
  - name: products
    source: events
    metrics: {views: {weight: 1}}
    refresh: 1s
`

var (
	binary string
	// exampleBase is the server the Examples talk to, started by TestMain.
	exampleBase string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "matchgate-client-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tempdir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if binary, err = servertest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := filepath.Join(dir, "queues.yaml")
	if err := os.WriteFile(cfg, []byte(testQueues), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := startProcess(cfg, io.Discard)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	exampleBase = srv.Base
	code := m.Run()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "example server:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// startProcess runs the server with the queue config cfg (the embedded
// default otherwise) and waits for it to listen; the log also goes to logw.
func startProcess(cfg string, logw io.Writer, extra ...string) (*servertest.Process, error) {
	return servertest.Start(binary, logw, nil, append([]string{"--secret", testSecret, "--guests", "true",
		"--config", cfg, "--limit-guests-ip", "off", "--limit-connects-ip", "off"}, extra...)...)
}

// startServer runs a server for one test and stops it at its cleanup; the
// log is printed when the test failed.
func startServer(t *testing.T, extra ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(testQueues), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(cfg, io.Discard, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", tail(p.Logs(), 20000))
		}
	})
	return p.Base
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// testContext is a context ending with the test, within 30s.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
