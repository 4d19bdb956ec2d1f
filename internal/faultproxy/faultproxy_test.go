package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/faultproxy"
)

// echo is an upstream that answers every line with "ok <line>" and keeps
// the lines it got.
type echo struct {
	ln   net.Listener
	mu   sync.Mutex
	got  []string
	wg   sync.WaitGroup
	done chan struct{}
}

func newEcho(t *testing.T) *echo {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echo{ln: ln, done: make(chan struct{})}
	e.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.wg.Go(func() {
				defer c.Close()
				go func() { <-e.done; c.Close() }()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					e.mu.Lock()
					e.got = append(e.got, strings.TrimSpace(line))
					e.mu.Unlock()
					if _, err := io.WriteString(c, "ok "+line); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() { ln.Close(); close(e.done); e.wg.Wait() })
	return e
}

func (e *echo) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

func dial(t *testing.T, p *faultproxy.Proxy) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func ask(t *testing.T, c net.Conn, r *bufio.Reader, line string) (string, error) {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return r.ReadString('\n')
}

func TestPassForwardsBothWays(t *testing.T) {
	p := faultproxy.New(t, newEcho(t).ln.Addr().String())
	c, r := dial(t, p)
	for _, l := range []string{"a", "b", "c"} {
		if got, err := ask(t, c, r, l); err != nil || got != "ok "+l+"\n" {
			t.Fatalf("ask %s = %q, %v", l, got, err)
		}
	}
}

// The server gets the request and answers; the client never sees the
// answer, and its connection ends. Then the proxy passes again.
func TestDropAfterRequest(t *testing.T) {
	e := newEcho(t)
	p := faultproxy.New(t, e.ln.Addr().String())
	c, r := dial(t, p)
	if _, err := ask(t, c, r, "warm"); err != nil {
		t.Fatal(err)
	}
	p.DropAfterRequest([]byte("commit"))
	if got, err := ask(t, c, r, "other"); err != nil || got != "ok other\n" {
		t.Fatalf("a request the fault does not match = %q, %v", got, err)
	}
	got, err := ask(t, c, r, "commit 1")
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the reply to the matched request arrived: %q, %v", got, err)
	}
	if l := e.lines(); l[len(l)-1] != "commit 1" {
		t.Fatalf("the server did not get the request: %v", l)
	}
	if p.Dropped() != 1 {
		t.Fatalf("dropped %d", p.Dropped())
	}
	c2, r2 := dial(t, p)
	if got, err := ask(t, c2, r2, "commit 2"); err != nil || got != "ok commit 2\n" {
		t.Fatalf("after the fault = %q, %v", got, err)
	}
}

func TestDropReply(t *testing.T) {
	e := newEcho(t)
	p := faultproxy.New(t, e.ln.Addr().String())
	c, r := dial(t, p)
	p.DropReply([]byte("ok lose"))
	if got, err := ask(t, c, r, "keep"); err != nil || got != "ok keep\n" {
		t.Fatalf("ask keep = %q, %v", got, err)
	}
	if got, err := ask(t, c, r, "lose"); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the matched reply arrived: %q, %v", got, err)
	}
	if l := e.lines(); len(l) != 2 || l[1] != "lose" {
		t.Fatalf("server got %v", l)
	}
}

// A blackhole forwards nothing either way; Pass brings the proxy back, and
// closes the connections whose bytes it swallowed.
func TestBlackhole(t *testing.T) {
	e := newEcho(t)
	p := faultproxy.New(t, e.ln.Addr().String())
	c, r := dial(t, p)
	if _, err := ask(t, c, r, "before"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	if _, err := io.WriteString(c, "lost\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if got, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a blackhole = %q, %v", got, err)
	}
	if l := e.lines(); len(l) != 1 {
		t.Fatalf("the server got %v through a blackhole", l)
	}
	p.Pass()
	// The connection that lost bytes is closed; a new one works.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection whose bytes a blackhole swallowed is still open: %q, %v", got, err)
	}
	c2, r2 := dial(t, p)
	if got, err := ask(t, c2, r2, "after"); err != nil || got != "ok after\n" {
		t.Fatalf("after Pass = %q, %v", got, err)
	}
}

func TestRefusesAnUpstreamOffLoopback(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		faultproxy.New(ft, "192.0.2.1:5432")
	}()
	if !ft.failed {
		t.Fatal("a proxy to a non-loopback address was started")
	}
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}

func (f *fatalRecorder) Helper() {}
