package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/ratelimit"
)

// outFrame is one queued server→client frame.
type outFrame struct {
	kind string // metrics label; "" for pushes, derived when written
	data []byte // shared with other sockets for pushes: never modified
}

// session is one open WebSocket. Its reader is the HTTP handler goroutine;
// writers and command workers are started on demand and exit when their
// queue is empty, so an idle session costs exactly one goroutine.
type session struct {
	srv      *Server
	id       uint64
	socketID string // the per-user socket lease: instance/id
	slot     int    // ping slot (Server.slots)
	conn     *websocket.Conn
	raw      net.Conn // the hijacked connection (every upgrade has one): write deadlines, drop
	p        principal
	ip       netip.Addr // the client, for per-IP limits

	// The reader's own: the message bucket, frames dropped in a row, and
	// when a drop was last answered.
	bucket      *ratelimit.Bucket
	dropped     int
	lastRefusal time.Time

	// reading is set once hello is queued and the read loop runs: only then
	// can a ping be answered (the reader reads the pong).
	reading atomic.Bool

	mu        sync.Mutex
	out       []outFrame // waiting to be written, at most cfg.SendQueue
	outBytes  int64      // the bytes of out, at most cfg.SendQueueBytes
	writing   bool       // a writer goroutine is draining out
	ready     bool       // hello is queued: writing may start
	closing   bool       // no more frames or commands are taken
	closeCode websocket.StatusCode
	cmds      []queuedCommand // waiting to run, at most maxPendingCommands
	working   bool            // a command worker goroutine is draining cmds

	// prov holds a provider's queues online (nil for a player's socket).
	// Set by setup before the first command.
	prov *sessionProviders
}

// lease names the session's per-user socket lease.
func (s *session) lease() ratelimit.Lease {
	return ratelimit.Lease{UserID: s.p.UserID, SocketID: s.socketID}
}

// push is the Subscriber's deliver callback. It never blocks.
func (s *session) push(frame []byte) {
	s.enqueue(outFrame{data: frame})
}

// enqueue queues a frame for writing without blocking. A full queue (in
// frames or in bytes) marks the session closing and disconnects it with
// CloseSlowConsumer.
func (s *session) enqueue(f outFrame) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	cfg := &s.srv.cfg
	if len(s.out) >= cfg.SendQueue || s.outBytes+int64(len(f.data)) > cfg.SendQueueBytes {
		frames, bytes := len(s.out), s.outBytes
		s.closing, s.closeCode = true, CloseSlowConsumer
		s.out, s.outBytes, s.cmds = nil, 0, nil
		s.mu.Unlock()
		s.srv.metrics.overflows.Inc()
		s.srv.log.Warn("slow consumer disconnected",
			slog.Uint64("session", s.id), slog.String("user", s.p.UserID),
			slog.Int("queued_frames", frames), slog.Int64("queued_bytes", bytes))
		// Close waits for the writer's deadline and the close handshake:
		// never on the caller's (the dispatch) goroutine.
		s.srv.tasks.Go(func() { s.closeHandshake(CloseSlowConsumer, "slow consumer", s.srv.cfg.WriteTimeout) })
		return
	}
	s.out = append(s.out, f)
	s.outBytes += int64(len(f.data))
	start := s.ready && !s.writing
	if start {
		s.writing = true
	}
	s.mu.Unlock()
	if start {
		s.srv.tasks.Go(s.writeLoop)
	}
}

// begin queues hello in front of any push that arrived while the state was
// loading and lets the writer start. It reports false if the session is
// already closing.
func (s *session) begin(hello outFrame) bool {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	s.out = append(s.out, outFrame{})
	copy(s.out[1:], s.out)
	s.out[0] = hello
	s.outBytes += int64(len(hello.data))
	s.ready = true
	start := !s.writing
	s.writing = true
	s.mu.Unlock()
	if start {
		s.srv.tasks.Go(s.writeLoop)
	}
	return true
}

// writeLoop writes queued frames in order, each with a deadline, and exits
// when the queue is empty.
func (s *session) writeLoop() {
	for {
		s.mu.Lock()
		if s.closing || len(s.out) == 0 {
			s.writing = false
			s.out, s.outBytes = nil, 0 // an idle socket keeps no buffer
			s.mu.Unlock()
			return
		}
		f := s.out[0]
		s.out[0] = outFrame{}
		s.out = s.out[1:]
		s.outBytes -= int64(len(f.data))
		s.mu.Unlock()

		err := s.write(f.data)
		if err != nil {
			// A failed or timed-out write leaves the connection unusable; the
			// reader sees the close and cleans up.
			s.mu.Lock()
			s.writing = false
			won := !s.closing
			s.closing, s.out, s.outBytes, s.cmds = true, nil, 0, nil
			s.mu.Unlock()
			if won {
				_ = s.conn.CloseNow()
			}
			return
		}
		kind := f.kind
		if kind == "" {
			kind = outLabel(frameType(f.data))
		}
		s.srv.metrics.countOut(kind)
	}
}

// write writes one frame within WriteTimeout. The deadline is the
// connection's own: a context with a timeout costs a timer, a context
// watch inside the library and their garbage on every frame of every
// socket, a twelfth of the gateway's allocations under load.
func (s *session) write(data []byte) error {
	if err := s.raw.SetWriteDeadline(time.Now().Add(s.srv.cfg.WriteTimeout)); err != nil {
		return err
	}
	err := s.conn.Write(context.Background(), websocket.MessageText, data)
	// Control frames the library writes (pongs, the close) bring their own
	// timeouts. Clearing fails only on a connection closed since the write,
	// which the reader sees: the frame itself was written.
	_ = s.raw.SetWriteDeadline(time.Time{})
	return err
}

// shut marks the session closing with code; only the first caller wins.
func (s *session) shut(code websocket.StatusCode) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.closing, s.closeCode = true, code
	s.out, s.outBytes, s.cmds = nil, 0, nil
	return true
}

// close performs the close handshake with code unless the session is
// already closing. A peer that does not answer within WriteTimeout is
// dropped (websocket.Conn.Close alone may wait twice 5s).
func (s *session) close(code websocket.StatusCode, reason string) {
	if s.shut(code) {
		s.closeHandshake(code, reason, s.srv.cfg.WriteTimeout)
	}
}

// closeHandshake is close for a session already marked closing: the peer
// has limit to answer, then the connection is dropped.
func (s *session) closeHandshake(code websocket.StatusCode, reason string, limit time.Duration) {
	if limit <= 0 {
		s.drop()
		return
	}
	t := time.AfterFunc(limit, s.drop)
	_ = s.conn.Close(code, reason)
	t.Stop()
}

// drop closes the TCP connection at once, ending any close handshake in
// progress.
func (s *session) drop() { _ = s.raw.Close() }

// ping sends one protocol ping; a missing pong drops the connection.
func (s *session) ping(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, s.srv.cfg.PingTimeout)
	defer cancel()
	start := time.Now()
	err := s.conn.Ping(ctx)
	if err == nil {
		s.srv.metrics.pingRTT.Observe(time.Since(start).Seconds())
		return
	}
	if parent.Err() != nil {
		return // the pinger is stopping, the peer did nothing wrong
	}
	if s.shut(ClosePingTimeout) {
		s.srv.log.Debug("ping failed", slog.Uint64("session", s.id), slog.Any("error", err))
		_ = s.conn.CloseNow()
	}
}

// finish ends the session after its read loop returned err, and reports the
// close code to record: the one the server chose, else the peer's, else 1006.
func (s *session) finish(err error) websocket.StatusCode {
	s.mu.Lock()
	code := s.closeCode
	s.closing, s.out, s.outBytes, s.cmds = true, nil, 0, nil
	s.mu.Unlock()
	if code == 0 {
		switch {
		case errors.Is(err, websocket.ErrMessageTooBig):
			code = CloseTooBig
		case websocket.CloseStatus(err) != -1:
			code = websocket.CloseStatus(err)
		default:
			code = closeAbnormal
		}
	}
	_ = s.conn.CloseNow()
	return code
}

// frameType reads the "type" of a pushed frame (for metrics only).
func frameType(b []byte) string {
	// Every frame matchgate builds starts with its type; reading the whole
	// frame for it cost 3% of the gateway's CPU at 5,000 joins/s.
	const lead = `{"type":"`
	if rest, ok := bytes.CutPrefix(b, []byte(lead)); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return string(rest[:end])
		}
	}
	var env struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &env) != nil {
		return ""
	}
	return env.Type
}
