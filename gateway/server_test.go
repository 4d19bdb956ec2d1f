package gateway

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestRunDrainsWithGoingAway(t *testing.T) {
	env := startServer(t, Config{})
	const n = 20
	codes := make(chan websocket.StatusCode, n)
	var wg sync.WaitGroup
	for i := range n {
		c := dial(t, env.wsURL(), mustToken(t, "u"+string(rune('a'+i)), nil))
		readFrame(t, c)
		wg.Go(func() {
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					codes <- websocket.CloseStatus(err)
					return
				}
			}
		})
	}
	start := time.Now()
	if err := env.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("drain took %v", d)
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != websocket.StatusGoingAway {
			t.Errorf("client saw close %v, want 1001", code)
		}
	}
	if got := env.srv.sessionCount(); got != 0 {
		t.Errorf("%d sessions left", got)
	}
	if v := metricValue(t, env.reg, "matchgate_ws_connections_closed_total", "code", "1001"); v != n {
		t.Errorf("closed{1001} = %v, want %d", v, n)
	}
	if v := metricValue(t, env.reg, "matchgate_ws_connections"); v != 0 {
		t.Errorf("connections gauge = %v", v)
	}
}

func TestDrainDropsUnresponsiveSocketsAtDeadline(t *testing.T) {
	env := startServer(t, Config{ShutdownTimeout: 300 * time.Millisecond})
	c := dial(t, env.wsURL(), mustToken(t, "mute", nil)) // never reads: never answers the close
	_ = c
	start := time.Now()
	if err := env.stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("drain took %v despite a 300ms budget", d)
	}
}

func TestRunTwice(t *testing.T) {
	env := startServer(t, Config{})
	readFrame(t, dial(t, env.wsURL(), mustToken(t, "x", nil))) // Run is serving
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := env.srv.Run(context.Background(), ln); err == nil {
		t.Fatal("second Run succeeded")
	}
}

// TestIdleSocketCostsOneGoroutine: an idle socket keeps only its reader.
func TestIdleSocketCostsOneGoroutine(t *testing.T) {
	env := startServer(t, Config{PingInterval: time.Hour})
	warm := dial(t, env.wsURL(), mustToken(t, "warm", nil))
	readFrame(t, warm)
	before := settledGoroutines()

	const n = 200
	conns := make([]*websocket.Conn, 0, n)
	for i := range n {
		c := dial(t, env.wsURL(), mustToken(t, "idle-"+strconv.Itoa(i), nil))
		readFrame(t, c) // hello written: its writer is done
		conns = append(conns, c)
	}
	after := settledGoroutines()
	perSocket := float64(after-before) / n
	t.Logf("goroutines: %d → %d for %d idle sockets (%.2f per socket)", before, after, n, perSocket)
	if perSocket > 1.2 || perSocket < 0.9 {
		t.Fatalf("%.2f goroutines per idle socket, want about 1", perSocket)
	}
	for _, c := range conns {
		_ = c.CloseNow()
	}
	eventually(t, 10*time.Second, "sockets closed", func() bool { return env.srv.sessionCount() == 1 })
}

// settledGoroutines waits until the goroutine count stops moving.
func settledGoroutines() int {
	last, stable := runtime.NumGoroutine(), 0
	for i := 0; i < 400 && stable < 10; i++ {
		time.Sleep(10 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	return last
}
