package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// pgProxy is a loopback TCP proxy in front of PostgreSQL, the servers'
// --postgres-url during a run with --pg-fault-for. It passes bytes through,
// reading the client's side as PostgreSQL messages so that, during its fault
// window, it can pick requests to break:
//
//   - cut: half of a Bind or Query message is forwarded, then both sides are
//     closed; PostgreSQL sees a statement cut short and rolls it back;
//   - reply dropped: a Sync or Query (the message that ends a request, and so
//     commits an implicit transaction or carries a COMMIT) is forwarded whole,
//     then the client's socket is closed and PostgreSQL's answer is read and
//     thrown away. The statement has run — a commit has landed — but the
//     client cannot know: an ambiguous commit.
type pgProxy struct {
	ln       net.Listener
	upstream string

	mu         sync.Mutex
	rng        *rand.Rand
	cutChance  float64 // pgCutChance; tests set their own
	dropChance float64 // pgDropChance
	faultUntil time.Time
	conns      map[net.Conn]struct{}
	closed     bool

	wg             sync.WaitGroup
	accepted       atomic.Int64
	cuts, dropped  atomic.Int64
	windows        atomic.Int64
	upstreamErrors atomic.Int64
}

// Chances per request during a fault window: most requests in the window
// break, so every pooled connection of every server is hit within it.
const (
	pgCutChance  = 0.25 // of a Bind or Query: cut mid-message
	pgDropChance = 0.35 // of a Sync or Query: forwarded, its reply lost
)

// startPGProxy listens on a loopback port and forwards to upstream
// (host:port of the real PostgreSQL).
func startPGProxy(upstream string, seed uint64) (*pgProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pg proxy: %w", err)
	}
	p := &pgProxy{ln: ln, upstream: upstream, rng: rand.New(rand.NewPCG(seed, 0x9a9e)),
		cutChance: pgCutChance, dropChance: pgDropChance, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// proxiedURL is raw with its host and port replaced by the proxy's.
func (p *pgProxy) proxiedURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--pg-fault-for needs --postgres-url as a postgres:// URL with a TCP host")
	}
	u.Host = p.ln.Addr().String()
	return u.String(), nil
}

// pgUpstream is the host:port of a postgres:// URL.
func pgUpstream(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("--pg-fault-for needs --postgres-url as a postgres:// URL with a TCP host")
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// fault opens a fault window of length d from now.
func (p *pgProxy) fault(d time.Duration) {
	p.mu.Lock()
	p.faultUntil = time.Now().Add(d)
	p.mu.Unlock()
	p.windows.Add(1)
}

// roll decides the fate of one client message: "cut", "drop" or "".
func (p *pgProxy) roll(typ byte) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !time.Now().Before(p.faultUntil) {
		return ""
	}
	x := p.rng.Float64()
	switch {
	case (typ == 'B' || typ == 'Q') && x < p.cutChance:
		return "cut"
	case (typ == 'S' || typ == 'Q') && x >= 1-p.dropChance:
		return "drop"
	}
	return ""
}

func (p *pgProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *pgProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c, true) {
			c.Close()
			return
		}
		p.accepted.Add(1)
		p.wg.Go(func() {
			defer p.track(c, false)
			p.serve(c)
		})
	}
}

// close stops accepting, closes every connection and waits for them.
func (p *pgProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// proxyConn is one client connection and its upstream.
type proxyConn struct {
	client, up net.Conn
	dropping   atomic.Bool // the upstream's bytes are read and thrown away
}

func (p *pgProxy) serve(client net.Conn) {
	up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		p.upstreamErrors.Add(1)
		client.Close()
		return
	}
	if !p.track(up, true) {
		client.Close()
		up.Close()
		return
	}
	defer p.track(up, false)
	c := &proxyConn{client: client, up: up}
	done := make(chan struct{})
	go func() { // owned by serve: waited for below
		defer close(done)
		c.replies()
	}()
	p.requests(c)
	client.Close()
	if c.dropping.Load() {
		// PostgreSQL runs what it was sent; replies ends at the first byte of
		// its answer (the statement is done), or after 2 s.
		up.SetReadDeadline(time.Now().Add(2 * time.Second))
	} else {
		up.Close()
	}
	<-done
	up.Close()
}

// replies copies the upstream's bytes to the client until the connection
// is dropping; then it waits for the first byte of the answer to the
// dropped request and throws it away. Only then is the upstream closed: the
// shared PostgreSQL's connection slots are not held any longer than that.
func (c *proxyConn) replies() {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.up.Read(buf)
		if c.dropping.Load() {
			if n > 0 || err != nil {
				return
			}
			continue
		}
		if n > 0 {
			if _, werr := c.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !c.dropping.Load() {
				c.client.Close() // the server went away: so does the client's socket
			}
			return
		}
	}
}

// Startup-phase request codes (the PostgreSQL protocol's startup packets).
const (
	pgSSLRequest = 80877103
	pgGSSRequest = 80877104
)

// requests forwards the client's messages one at a time, breaking some in a
// fault window; it returns when either side ends or a fault ended the
// connection.
func (p *pgProxy) requests(c *proxyConn) {
	// Startup packets have no type byte: a length (itself included), then
	// the body. An SSL or GSS request is answered with one byte and followed
	// by the real startup packet.
	for {
		msg, err := readPacket(c.client, nil)
		if err != nil {
			return
		}
		if _, err := c.up.Write(msg); err != nil {
			return
		}
		code := binary.BigEndian.Uint32(msg[4:8])
		if code != pgSSLRequest && code != pgGSSRequest {
			break
		}
	}
	var hdr [1]byte
	for {
		if _, err := io.ReadFull(c.client, hdr[:]); err != nil {
			return
		}
		msg, err := readPacket(c.client, hdr[:])
		if err != nil {
			return
		}
		switch p.roll(hdr[0]) {
		case "cut":
			c.up.Write(msg[:len(msg)/2])
			p.cuts.Add(1)
			return
		case "drop":
			c.dropping.Store(true) // before the request goes out: no byte of its answer gets through
			c.up.Write(msg)
			p.dropped.Add(1)
			return
		}
		if _, err := c.up.Write(msg); err != nil {
			return
		}
	}
}

// maxPGMessage bounds a message the proxy buffers (the servers' largest,
// a batch commit, is far below it).
const maxPGMessage = 64 << 20

// readPacket reads a length-prefixed packet (the length counts itself) and
// returns prefix, the length and the body together.
func readPacket(r io.Reader, prefix []byte) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n < 4 || n > maxPGMessage {
		return nil, fmt.Errorf("pg proxy: message length %d", n)
	}
	msg := make([]byte, 0, len(prefix)+int(n))
	msg = append(append(msg, prefix...), l[:]...)
	msg = msg[:len(prefix)+int(n)]
	if _, err := io.ReadFull(r, msg[len(prefix)+4:]); err != nil {
		return nil, err
	}
	return msg, nil
}
