package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
	if binary, err = build(dir); err != nil {
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
	exampleBase = srv.base
	code := m.Run()
	if err := srv.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "example server:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// build compiles cmd/matchgate from the module root into dir with the go
// of PATH.
func build(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not in a module")
	}
	bin := filepath.Join(dir, "matchgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/matchgate")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/matchgate: %w\n%s", err, out)
	}
	return bin, nil
}

// process is one running `matchgate serve`.
type process struct {
	cmd  *exec.Cmd
	base string
	logs *syncBuffer
	done chan error
}

// startProcess runs the server with the queue config cfg and waits for
// its "matchgate listening" line; the log also goes to logw.
func startProcess(cfg string, logw io.Writer, extra ...string) (*process, error) {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--guests", "true",
		"--log-format", "json", "--config", cfg, "--limit-guests-ip", "off", "--limit-connects-ip", "off"}, extra...)
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start matchgate: %w", err)
	}
	p := &process{cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	urls := make(chan string, 1)
	var copied sync.WaitGroup
	copied.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			p.logs.Write(append(line, '\n'))
			_, _ = logw.Write(append(line, '\n'))
			var rec struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "matchgate listening" {
				select {
				case urls <- strings.TrimSuffix(rec.URL, "/"):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	})
	go func() {
		copied.Wait()
		p.done <- cmd.Wait()
	}()
	select {
	case p.base = <-urls:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("matchgate exited before listening: %v\n%s", err, p.logs.String())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-p.done
		return nil, fmt.Errorf("matchgate did not listen within 30s\n%s", p.logs.String())
	}
}

// stop sends SIGTERM and waits for the graceful stop (SIGKILL after 20s).
func (p *process) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("matchgate exited with %w", err)
		}
		return nil
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("matchgate did not stop on SIGTERM within 20s")
	}
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
		if err := p.stop(); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", tail(p.logs.String(), 20000))
		}
	})
	return p.base
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testContext is a context ending with the test, within 30s.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
