// Package faultproxy is a loopback TCP proxy for tests that puts faults
// between a client and its server: replies lost after the server acted on a
// request, connections that go silent. A test points its client at Addr
// instead of the server, and arms a fault when it wants one.
//
// The proxy forwards bytes as they come, in chunks of what one read got; a
// fault's match is looked for in each chunk. On loopback a small request or
// reply arrives as one chunk.
package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards the TCP connections made to Addr to its upstream.
type Proxy struct {
	t        testing.TB
	upstream string
	ln       net.Listener
	wg       sync.WaitGroup

	mu        sync.Mutex
	blackhole bool
	// afterRequest, when armed, is the request to pass on before its
	// connection's reply is lost (nil matches any); afterArmed says armed.
	afterRequest []byte
	afterArmed   bool
	// reply, when armed, is what the reply to lose contains.
	reply      []byte
	replyArmed bool
	dropped    int
	conns      map[*link]struct{}
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	// doomed is set once the connection's next reply is to be lost;
	// broken once a blackhole swallowed some of its bytes.
	doomed, broken bool
	once           sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		_ = l.client.Close()
		_ = l.server.Close()
	})
}

// New starts a proxy on a loopback port in front of upstream, which must be
// a loopback address too (faults are never aimed anywhere else). It stops at
// the test's cleanup, closing every connection.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	host, _, err := net.SplitHostPort(upstream)
	if err != nil {
		t.Fatalf("faultproxy: upstream %q: %v", upstream, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		t.Fatalf("faultproxy: upstream %q is not a loopback address", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	p := &Proxy{t: t, upstream: upstream, ln: ln, conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address ("127.0.0.1:port"), for the client to dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy and closes every connection through it, and waits
// for its goroutines. Calling it again does nothing.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for l := range p.conns {
		l.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Pass forwards everything again, disarming any fault. A connection that
// lost bytes to a blackhole is closed: its stream is broken, as a real one
// would be reset once the network is back.
func (p *Proxy) Pass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole, p.afterArmed, p.replyArmed = false, false, false
	for l := range p.conns {
		if l.broken {
			l.close()
		}
	}
}

// Blackhole forwards nothing in either direction until Pass: connections
// (new ones too) stay open and every byte is swallowed, as behind a network
// that went silent. The client learns of it only from its own timeouts.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = true
}

// DropAfterRequest arms a lost reply: the next client→server chunk that
// contains request (any chunk when request is nil) is passed on to the
// server, and when the server's reply to it arrives, it is thrown away and
// the connection closed both ways. The server has then acted on the request
// and answered; the client sees its connection end with no answer. One
// connection is cut, then the proxy passes everything again.
func (p *Proxy) DropAfterRequest(request []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.afterRequest, p.afterArmed = bytes.Clone(request), true
}

// DropReply arms a lost reply by its content: the next server→client chunk
// that contains reply is thrown away and its connection closed both ways.
// One connection is cut, then the proxy passes everything again.
func (p *Proxy) DropReply(reply []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reply, p.replyArmed = bytes.Clone(reply), true
}

// Dropped is how many connections an armed fault has cut.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", p.upstream)
		if err != nil {
			p.t.Logf("faultproxy: dial %s: %v", p.upstream, err)
			_ = c.Close()
			continue
		}
		l := &link{client: c, server: s}
		p.mu.Lock()
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, c, s, true)
		go p.pipe(l, s, c, false)
	}
}

// pipe copies one direction of l until either side ends.
func (p *Proxy) pipe(l *link, from, to net.Conn, request bool) {
	defer p.wg.Done()
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			forward, cut := p.decide(l, buf[:n], request)
			if cut {
				return
			}
			if forward {
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.t.Logf("faultproxy: read: %v", err)
			}
			return
		}
	}
}

// decide says what becomes of one chunk: forwarded or swallowed, and
// whether the connection is cut instead.
func (p *Proxy) decide(l *link, chunk []byte, request bool) (forward, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blackhole {
		l.broken = true
		return false, false
	}
	if request {
		if p.afterArmed && (p.afterRequest == nil || bytes.Contains(chunk, p.afterRequest)) {
			p.afterArmed = false
			l.doomed = true
		}
		return true, false
	}
	if l.doomed || (p.replyArmed && bytes.Contains(chunk, p.reply)) {
		if !l.doomed {
			p.replyArmed = false
		}
		l.doomed = false
		p.dropped++
		return false, true
	}
	return true, false
}
