package client_test

import (
	"bytes"
	bin "encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/client"
	"github.com/matchgate/matchgate/internal/faultproxy"
	"github.com/matchgate/matchgate/protocol"
)

// tap records what OnFrame and OnSession see, in order.
type tap struct {
	mu  sync.Mutex
	log []tapped
}

type tapped struct {
	frame   string // the frame's type; "" for a session boundary
	raw     []byte
	at      time.Time
	session *client.Session
}

func (tp *tap) options(o *client.Options) *client.Options {
	o.OnFrame = func(data []byte, at time.Time) {
		var f struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(data, &f)
		tp.mu.Lock()
		tp.log = append(tp.log, tapped{frame: f.Type, raw: data, at: at})
		tp.mu.Unlock()
	}
	o.OnSession = func(s client.Session) {
		tp.mu.Lock()
		tp.log = append(tp.log, tapped{at: s.At, session: &s})
		tp.mu.Unlock()
	}
	return o
}

func (tp *tap) seen() []tapped {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]tapped(nil), tp.log...)
}

// waitFor polls the tap until ok holds, failing after 10s.
func (tp *tap) waitFor(t *testing.T, what string, ok func([]tapped) bool) []tapped {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := tp.seen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; saw %s", what, describe(s))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describe(s []tapped) string {
	var b strings.Builder
	for _, x := range s {
		switch {
		case x.session == nil:
			b.WriteString(x.frame)
		case x.session.Up:
			b.WriteString("[up]")
		default:
			b.WriteString("[down: " + errString(x.session.Err) + "]")
		}
		b.WriteString(" ")
	}
	return b.String()
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func downs(s []tapped) int {
	n := 0
	for _, x := range s {
		if x.session != nil && !x.session.Up {
			n++
		}
	}
	return n
}

// OnFrame sees every frame as read, the ones the client keeps out of its
// events too: a status reply repeats the ticket's version, which yields no
// TicketEvent, but the frame is seen. The hello comes first, after the
// session's start, and the times never go back.
func TestOnFrameSeesEveryFrame(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	var tp tap
	a := dialGuest(t, base, "", tp.options(&client.Options{}))
	tk, err := a.Join(ctx, "lonely", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Cancel(ctx, tk.ID); err != nil {
		t.Fatal(err)
	}
	s := tp.seen()
	var types []string
	for _, x := range s {
		if x.session == nil {
			types = append(types, x.frame)
		}
	}
	if len(s) < 2 || s[0].session == nil || !s[0].session.Up || s[1].frame != protocol.FrameHello {
		t.Fatalf("start: %s", describe(s))
	}
	for _, want := range []string{protocol.FrameJoined, protocol.FrameStatus, protocol.FrameCancelled} {
		if !strings.Contains(strings.Join(types, " "), want) {
			t.Fatalf("no %s among %v", want, types)
		}
	}
	for i := 1; i < len(s); i++ {
		if s[i].at.Before(s[i-1].at) {
			t.Fatalf("time went back at %d: %s", i, describe(s))
		}
	}
	var status []byte
	for _, x := range s {
		if x.frame == protocol.FrameStatus {
			status = x.raw
		}
	}
	if !bytes.Contains(status, []byte(tk.ID)) {
		t.Fatalf("the status frame as read does not list %s: %s", tk.ID, status)
	}
	// The status reply repeated the WAITING ticket's version: no event
	// for it, while OnFrame saw it.
	for {
		e := receive(t, a.Client)
		if te, ok := e.(client.TicketEvent); ok && te.Frame == protocol.FrameStatus {
			t.Fatalf("a ticket event from the status reply: %+v", te)
		}
		if te, ok := e.(client.TicketEvent); ok && te.Ticket.Status == client.StatusCancelled {
			break
		}
	}
}

// OnSend sees each command as written, before its reply reaches OnFrame:
// the reply's re is the command's id.
func TestOnSendNamesTheReply(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	var tp tap
	o := tp.options(&client.Options{})
	var mu sync.Mutex
	var sent []protocol.Command
	o.OnSend = func(data []byte, at time.Time) {
		var cmd protocol.Command
		if err := json.Unmarshal(data, &cmd); err != nil {
			t.Errorf("OnSend: %v: %s", err, data)
		}
		mu.Lock()
		sent = append(sent, cmd)
		mu.Unlock()
		tp.mu.Lock()
		tp.log = append(tp.log, tapped{frame: "sent:" + cmd.ID, at: at})
		tp.mu.Unlock()
	}
	a := dialGuest(t, base, "", o)
	tk, err := a.Join(ctx, "lonely", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(sent) != 1 || sent[0].Type != protocol.FrameJoin || sent[0].Queue != "lonely" || sent[0].ID == "" {
		t.Fatalf("sent %+v", sent)
	}
	id := sent[0].ID
	mu.Unlock()
	s := tp.seen()
	sentAt, replyAt := -1, -1
	for i, x := range s {
		if x.frame == "sent:"+id {
			sentAt = i
		}
		if x.frame == protocol.FrameJoined {
			var f struct {
				Re     string `json:"re"`
				Ticket struct {
					ID string `json:"id"`
				} `json:"ticket"`
			}
			_ = json.Unmarshal(x.raw, &f)
			if f.Re != id || f.Ticket.ID != tk.ID {
				t.Fatalf("joined re %q ticket %q, want %q %q", f.Re, f.Ticket.ID, id, tk.ID)
			}
			replyAt = i
		}
	}
	if sentAt < 0 || replyAt < sentAt {
		t.Fatalf("sent at %d, reply at %d: %s", sentAt, replyAt, describe(s))
	}
}

// OnSession sees each socket start and end, with the cause: a socket cut
// by the network ends with an error, the reconnect starts a session whose
// first frame is its hello, and Close ends the last one with nil.
func TestOnSessionBoundaries(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	proxy := faultproxy.New(t, strings.TrimPrefix(base, "http://"))
	var tp tap
	a := dialGuest(t, base, "ws://"+proxy.Addr()+"/v1/ws", tp.options(&client.Options{BackoffBase: 20 * time.Millisecond}))
	proxy.DropReply([]byte(`"pong"`))
	if err := a.Ping(ctx); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("ping with its reply lost: %v", err)
	}
	s := tp.waitFor(t, "a second hello", func(s []tapped) bool {
		n := 0
		for _, x := range s {
			if x.frame == protocol.FrameHello {
				n++
			}
		}
		return n == 2
	})
	// [up] hello [down: …] [up] hello, possibly with failed attempts'
	// boundaries between.
	if s[0].session == nil || !s[0].session.Up || s[1].frame != protocol.FrameHello {
		t.Fatalf("first session: %s", describe(s))
	}
	if s[2].session == nil || s[2].session.Up || s[2].session.Err == nil {
		t.Fatalf("the cut: %s", describe(s))
	}
	last := s[len(s)-2]
	if last.session == nil || !last.session.Up || s[len(s)-1].frame != protocol.FrameHello {
		t.Fatalf("second session: %s", describe(s))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	s = tp.seen()
	if end := s[len(s)-1]; end.session == nil || end.session.Up || end.session.Err != nil {
		t.Fatalf("after Close: %s", describe(s))
	}
}

// Drop cuts the socket with no close frame sent (the bytes the client
// wrote are watched on the way); the client reconnects, and the session's
// end says ErrDropped. Close, by contrast, sends its close frame.
func TestDropIsAbrupt(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	rec := newOpcodeProxy(t, strings.TrimPrefix(base, "http://"))
	var tp tap
	a := dialGuest(t, base, "ws://"+rec.addr()+"/v1/ws", tp.options(&client.Options{BackoffBase: 20 * time.Millisecond, PingInterval: -1}))
	if err := a.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	a.Drop()
	h := next(t, a.Client, 10*time.Second, func(e client.HelloEvent) bool { return e.Reconnect })
	if h.Hello.UserID != a.g.UserID {
		t.Fatalf("hello after the drop: %+v", h.Hello)
	}
	s := tp.seen()
	if downs(s) != 1 || !errors.Is(firstDown(s).Err, client.ErrDropped) {
		t.Fatalf("sessions: %s", describe(s))
	}
	if err := a.Ping(ctx); err != nil {
		t.Fatalf("ping on the new socket: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	ops := rec.opcodes()
	if len(ops) != 2 {
		t.Fatalf("%d connections through the proxy, want 2", len(ops))
	}
	if bytes.IndexByte(ops[0], opClose) >= 0 || bytes.IndexByte(ops[0], opText) < 0 {
		t.Fatalf("the dropped socket's frames: %x, want text and no close", ops[0])
	}
	if bytes.IndexByte(ops[1], opClose) < 0 {
		t.Fatalf("the closed socket's frames: %x, want a close", ops[1])
	}
}

// With DisableReconnect a Drop stops the client, and Err is ErrDropped.
func TestDropWithoutReconnect(t *testing.T) {
	base := startServer(t)
	a := dialGuest(t, base, "", &client.Options{DisableReconnect: true})
	a.Drop()
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client kept going")
	}
	if !errors.Is(a.Err(), client.ErrDropped) {
		t.Fatalf("Err after a drop: %v", a.Err())
	}
}

func firstDown(s []tapped) *client.Session {
	for _, x := range s {
		if x.session != nil && !x.session.Up {
			return x.session
		}
	}
	return &client.Session{}
}

const (
	opText  = 0x1
	opClose = 0x8
)

// opcodeProxy forwards loopback TCP connections and notes the opcode of
// every WebSocket frame the client sends on each, after the upgrade
// request.
type opcodeProxy struct {
	ln net.Listener
	wg sync.WaitGroup
	mu sync.Mutex
	op [][]byte
}

func newOpcodeProxy(t *testing.T, upstream string) *opcodeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &opcodeProxy{ln: ln}
	var conns sync.Map
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, up)
			p.mu.Lock()
			i := len(p.op)
			p.op = append(p.op, nil)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
			p.wg.Go(func() {
				p.watch(i, io.TeeReader(c, up))
				up.Close()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, v any) bool { k.(net.Conn).Close(); v.(net.Conn).Close(); return true })
		p.wg.Wait()
	})
	return p
}

func (p *opcodeProxy) addr() string { return p.ln.Addr().String() }

func (p *opcodeProxy) opcodes() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.op...)
}

// watch reads one connection's client→server stream: the HTTP request,
// then frames (a client's are masked), noting each opcode.
func (p *opcodeProxy) watch(i int, r io.Reader) {
	var head []byte
	b := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := io.ReadFull(r, b); err != nil {
			_, _ = io.Copy(io.Discard, r)
			return
		}
		head = append(head, b[0])
	}
	for {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			break
		}
		p.mu.Lock()
		p.op[i] = append(p.op[i], h[0]&0x0f)
		p.mu.Unlock()
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var x [2]byte
			if _, err := io.ReadFull(r, x[:]); err != nil {
				break
			}
			n = uint64(bin.BigEndian.Uint16(x[:]))
		case 127:
			var x [8]byte
			if _, err := io.ReadFull(r, x[:]); err != nil {
				break
			}
			n = bin.BigEndian.Uint64(x[:])
		}
		if h[1]&0x80 != 0 {
			n += 4 // the mask
		}
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, r)
}
