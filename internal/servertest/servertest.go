// Package servertest runs the real matchgate binary for tests outside
// cmd/matchgate, which cannot import package main: Build compiles it once,
// Start runs `matchgate serve` on a free loopback port and returns when it
// listens, Stop stops it as an operator would (SIGTERM, then the drain).
package servertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ModuleRoot is the directory of the go.mod of the go on PATH's current
// module.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod), nil
}

// Build compiles cmd/matchgate into dir with the go of PATH and returns the
// binary's path.
func Build(dir string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "matchgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/matchgate")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/matchgate: %w\n%s", err, out)
	}
	return bin, nil
}

// Process is one running `matchgate serve`.
type Process struct {
	// Base is the server's http://127.0.0.1:port, without a slash.
	Base string
	cmd  *exec.Cmd
	logs *buffer
	done chan error
}

// Start runs `bin serve --addr 127.0.0.1:0 --log-format json args...` with
// env added to the environment, and waits (30 s at most) for its "matchgate
// listening" line. The log also goes to logw when it is not nil.
func Start(bin string, logw io.Writer, env []string, args ...string) (*Process, error) {
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start matchgate: %w", err)
	}
	if logw == nil {
		logw = io.Discard
	}
	p := &Process{cmd: cmd, logs: &buffer{}, done: make(chan error, 1)}
	urls := make(chan string, 1)
	var copied sync.WaitGroup
	copied.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := append(sc.Bytes(), '\n')
			_, _ = p.logs.Write(line)
			_, _ = logw.Write(line)
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
	case p.Base = <-urls:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("matchgate exited before listening: %v\n%s", err, p.logs.String())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-p.done
		return nil, fmt.Errorf("matchgate did not listen within 30s\n%s", p.logs.String())
	}
}

// Logs is what the server has logged so far.
func (p *Process) Logs() string { return p.logs.String() }

// Stop sends SIGTERM and waits for the graceful stop (SIGKILL after 20 s).
func (p *Process) Stop() error {
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

type buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
