package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/ratelimit"
)

// maxPendingCommands bounds the commands one socket may have waiting while
// an earlier one runs; more are refused with RATE_LIMITED.
const maxPendingCommands = 16

// maxClientIDLen bounds the client's request id (it is echoed in "re").
const maxClientIDLen = 64

// wireTicket and wireMatch are what a reply holds: the wire shape, which
// protocol.Reply.AppendJSON writes.
func wireTicket(t matcher.Ticket) *protocol.WireTicket {
	w := protocol.TicketOf(t)
	return &w
}

func wireMatch(m matcher.Match) *protocol.WireMatch {
	w := protocol.MatchOf(m)
	return &w
}

// handleWS upgrades GET /v1/ws. Refusals happen before the upgrade, as HTTP,
// cheapest first: 503 while draining or at the node's connection cap, 429
// over the per-IP connect limit (counted before the token is checked, so
// forged tokens are limited too), 401 without a valid token (header or
// ?token=), 403 for a banned user, 429 over the per-user socket cap, 403
// from a foreign Origin. The handler goroutine then becomes the socket's
// reader until the socket closes.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !s.beginSession() {
		s.writeError(w, r, matcher.Errorf(matcher.CodeUnavailable, "server is shutting down"))
		return
	}
	// What a socket holds is given back when it ends, which, once it is up,
	// is after this handler has returned (see below): so no defers.
	var undo []func()
	end := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	undo = append(undo, s.sessionsWG.Done)
	handedOff := false
	defer func() {
		if !handedOff {
			end()
		}
	}()
	if n := s.open.Add(1); s.cfg.MaxConnections > 0 && n > int64(s.cfg.MaxConnections) {
		s.open.Add(-1)
		s.metrics.refuse(refusedNodeCap)
		s.writeError(w, r, matcher.Errorf(matcher.CodeUnavailable, "this node is at capacity: retry later"))
		return
	}
	undo = append(undo, func() { s.open.Add(-1) })
	ip := s.clientIP(r)
	if err := s.limitIP(r.Context(), limitConnectIP, ip, s.cfg.Limits.ConnectsPerIP); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.authenticate(r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.banned(p.UserID) {
		s.writeError(w, r, errBanned)
		return
	}
	id := s.nextSession.Add(1)
	socketID := s.instance + "/" + strconv.FormatUint(id, 10)
	if !s.acquireSocket(r.Context(), p.UserID, socketID) {
		s.metrics.refuse(refusedUserSockets)
		s.writeError(w, r, &limitError{
			err:   matcher.Errorf(matcher.CodeRateLimited, "too many open sockets for this user: close one first"),
			after: s.cfg.PingInterval,
		})
		return
	}
	undo = append(undo, func() { s.releaseSocket(p.UserID, socketID) })
	hc := &hijackCapture{ResponseWriter: w}
	conn, err := websocket.Accept(hc, r, &websocket.AcceptOptions{
		OriginPatterns:  s.cfg.AllowedOrigins,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		s.log.Debug("websocket upgrade refused", slog.String("request_id", requestID(r.Context())), slog.Any("error", err))
		return // Accept has written the response
	}
	conn.SetReadLimit(s.cfg.MaxFrameBytes)
	sess := &session{srv: s, id: id, socketID: socketID, conn: conn, raw: hc.conn, p: p, ip: ip,
		bucket: ratelimit.NewBucket(s.cfg.MessageRate, time.Now())}
	if deadline, draining := s.register(sess); draining {
		// Upgraded while the drain began: close it within the drain's budget.
		if sess.shut(CloseGoingAway) {
			sess.closeHandshake(CloseGoingAway, "server shutting down", min(s.cfg.WriteTimeout, time.Until(deadline)))
		}
		sess.finish(nil)
		return
	}
	s.metrics.accepted.Inc()
	s.metrics.connections.Inc()
	s.log.Debug("socket open", slog.Uint64("session", sess.id), slog.String("user", p.UserID))

	closed := func(code websocket.StatusCode) {
		s.unregister(sess)
		s.metrics.connections.Dec()
		s.metrics.closed.WithLabelValues(closeLabel(code)).Inc()
		s.log.Debug("socket closed", slog.Uint64("session", sess.id), slog.Int("code", int(code)))
	}
	teardown, code, ok := sess.setup()
	if !ok {
		closed(code)
		return
	}
	// An idle socket costs its reader goroutine. This handler's stack grew
	// through the upgrade and the catch-up and would stay grown; a fresh
	// goroutine reading an idle socket stays on a small stack. The handler
	// returns (net/http no longer owns the hijacked connection).
	handedOff = true
	go func() {
		code := CloseInternal
		defer func() {
			// net/http no longer guards this goroutine: a bug here must
			// cost one socket, not the process.
			if v := recover(); v != nil {
				s.log.Error("socket reader panicked", slog.Uint64("session", sess.id), slog.Any("panic", v))
				sess.drop()
			}
			teardown()
			closed(code)
			end()
		}()
		code = sess.finish(sess.readLoop())
	}()
}

// acquireSocket takes one of the user's socket leases. A failing lease
// store lets the socket in.
func (s *Server) acquireSocket(ctx context.Context, userID, socketID string) bool {
	if s.cfg.MaxSocketsPerUser <= 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, limiterTimeout)
	defer cancel()
	ok, err := s.cfg.Sockets.Acquire(ctx, userID, socketID, s.cfg.MaxSocketsPerUser)
	if err != nil {
		s.metrics.limiterErrors.Inc()
		s.warnEvery(&s.lastLimiterWarn, "socket leases unavailable: letting sockets in", slog.Any("error", err))
		return true
	}
	return ok
}

// releaseSocket gives a lease back; a lease that cannot be released expires.
func (s *Server) releaseSocket(userID, socketID string) {
	if s.cfg.MaxSocketsPerUser <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), limiterTimeout)
	defer cancel()
	if err := s.cfg.Sockets.Release(ctx, userID, socketID); err != nil {
		s.log.Debug("release socket lease", slog.String("user", userID), slog.Any("error", err))
	}
}

// serve runs a socket: subscribe, load the state, send hello, read until
// the connection ends. It returns the close code to record.
// setup subscribes, records presence, loads the state and queues hello. On
// success teardown undoes the subscription and the presence record once the
// socket ends; on failure the socket is closed and code is what to record.
func (s *session) setup() (teardown func(), code websocket.StatusCode, ok bool) {
	// A pointer, not a copy: the teardown closure lives as long as the
	// socket, and the copy of the Config (520 bytes, much of it pointers)
	// it captured stayed on the heap with every idle socket, for every
	// garbage collection to scan.
	cfg := &s.srv.cfg
	// Subscribe first: a push published while the state loads is queued
	// (behind hello) instead of lost.
	unsubscribe, err := cfg.Subscriber.Subscribe(s.srv.baseCtx, s.p.UserID, s.push)
	if err != nil {
		s.srv.log.Error("subscribe failed", slog.Uint64("session", s.id), slog.String("user", s.p.UserID), slog.Any("error", err))
		s.close(CloseTryAgainLater, "subscription unavailable")
		return nil, s.finish(err), false
	}
	teardown = unsubscribe

	ctx, cancel := context.WithTimeout(s.srv.baseCtx, cfg.CommandTimeout)
	if cfg.Presence != nil {
		if err := cfg.Presence.Connected(ctx, s.p.UserID); err != nil {
			// The periodic refresh records the user soon; not worth a refusal.
			s.srv.log.Warn("record presence", slog.String("user", s.p.UserID), slog.Any("error", err))
		}
		teardown = func() {
			unsubscribe()
			cfg.Presence.Disconnected(s.p.UserID)
		}
	}
	st, err := cfg.Matchmaker.UserState(ctx, s.p.UserID)
	cancel()
	if err != nil {
		c := classify(err)
		code := CloseInternal
		if c.status == http.StatusServiceUnavailable {
			code = CloseTryAgainLater
		}
		s.srv.log.Error("load user state failed", slog.Uint64("session", s.id), slog.String("user", s.p.UserID), slog.Any("error", err))
		s.close(code, "state unavailable")
		teardown()
		return nil, s.finish(err), false
	}
	hello := protocol.StateOf(protocol.FrameHello, "", st)
	hello.UserID, hello.Node = s.p.UserID, cfg.Node
	if s.srv.room != nil {
		ctx, cancel := context.WithTimeout(s.srv.baseCtx, cfg.CommandTimeout)
		hello.Admission = s.srv.room.helloPlaces(ctx, s)
		cancel()
		inner := teardown
		teardown = func() {
			s.srv.room.closed(s)
			inner()
		}
	}
	if s.srv.rankings != nil {
		inner := teardown
		teardown = func() {
			s.srv.rankings.closed(s)
			inner()
		}
	}
	if cfg.Providers != nil && s.p.Provider {
		ctx, cancel := context.WithTimeout(s.srv.baseCtx, cfg.CommandTimeout)
		hello.Providers = s.providerHello(ctx)
		cancel()
		inner := teardown
		teardown = func() {
			s.providersClosed()
			inner()
		}
	}
	b, err := json.Marshal(hello)
	if err != nil {
		s.srv.log.Error("encode hello failed", slog.Uint64("session", s.id), slog.Any("error", err))
		s.close(CloseInternal, "internal error")
		teardown()
		return nil, s.finish(err), false
	}
	s.begin(outFrame{kind: protocol.FrameHello, data: b})
	s.reading.Store(true)
	return teardown, 0, true
}

// readLoop reads frames until the connection fails or closes. It never
// waits on the Matchmaker: commands go to the worker, so pongs and close
// frames are always read promptly.
func (s *session) readLoop() error {
	for {
		typ, data, err := s.conn.Read(context.Background())
		if err != nil {
			return err
		}
		if !s.admitFrame(time.Now()) {
			if s.dropped > s.srv.cfg.MessageRate.N {
				s.close(CloseTooManyMessages, "too many messages")
				return errTooManyMessages
			}
			continue
		}
		if typ != websocket.MessageText {
			// Binary frames are answered with an error frame, not a close:
			// one bad frame should not cost the player its session.
			s.srv.metrics.countIn("other")
			s.replyError("", matcher.Errorf(matcher.CodeBadRequest, "binary frames are not supported: send JSON text frames"))
			continue
		}
		if protocol.IsRankingFrame(frameType(data)) {
			rc, err := decodeRankingFrame(data)
			s.srv.metrics.countIn("other")
			if err != nil {
				s.replyError(rc.ID, err)
				continue
			}
			s.queueCommand(queuedCommand{command: command{Command: protocol.Command{Type: rc.Type, ID: rc.ID}}, rank: &rc})
			continue
		}
		in, err := decodeClientFrame(data)
		if err != nil {
			s.srv.metrics.countIn("other")
			s.replyError(in.ID, err)
			continue
		}
		s.srv.metrics.countIn(inLabel(in.Type))
		s.queueCommand(queuedCommand{command: in})
	}
}

var errTooManyMessages = errors.New("too many messages")

// admitFrame takes a token of the socket's message bucket. A frame over the
// rate is dropped; the first drop in a second is answered with one
// RATE_LIMITED error frame (a flood must not be answered frame for frame).
// Called by the reader only.
func (s *session) admitFrame(now time.Time) bool {
	if s.bucket.Allow(now) {
		s.dropped = 0
		return true
	}
	s.dropped++
	s.srv.metrics.refuse(refusedMessages)
	if now.Sub(s.lastRefusal) >= time.Second {
		s.lastRefusal = now
		s.replyError("", &limitError{
			err:   matcher.Errorf(matcher.CodeRateLimited, "too many messages: frames are being dropped"),
			after: s.srv.cfg.MessageRate.Interval(),
		})
	}
	return false
}

// queueCommand hands a command to the worker, starting one if none runs.
// Commands run one at a time in arrival order, so replies come in request
// order (except RATE_LIMITED refusals of a full command queue).
func (s *session) queueCommand(in queuedCommand) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	if len(s.cmds) >= maxPendingCommands {
		s.mu.Unlock()
		s.replyError(in.ID, matcher.Errorf(matcher.CodeRateLimited, "too many requests in flight"))
		return
	}
	s.cmds = append(s.cmds, in)
	start := !s.working
	s.working = true
	s.mu.Unlock()
	if start {
		s.srv.tasks.Go(s.runCommands)
	}
}

// runCommands runs queued commands until none is left.
func (s *session) runCommands() {
	for {
		s.mu.Lock()
		if s.closing || len(s.cmds) == 0 {
			s.working = false
			s.cmds = nil
			s.mu.Unlock()
			return
		}
		in := s.cmds[0]
		s.cmds[0] = queuedCommand{}
		s.cmds = s.cmds[1:]
		s.mu.Unlock()
		s.execute(in)
	}
}

// queuedCommand is a command waiting for the worker: a ranking frame's
// members travel beside it (they are not a Command's).
type queuedCommand struct {
	command
	rank *protocol.RankingCommand
}

// execute runs one command and queues its reply.
func (s *session) execute(in queuedCommand) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.srv.baseCtx, s.srv.cfg.CommandTimeout)
	defer cancel()
	var reply any
	var err error
	switch {
	case in.rank != nil:
		reply, err = s.dispatchRanking(ctx, *in.rank)
	case in.prov != nil:
		reply, err = s.dispatchProvider(ctx, *in.prov)
	default:
		reply, err = s.dispatch(ctx, in.Command)
	}
	if err == nil {
		var b []byte
		if f, ok := reply.(protocol.Reply); ok {
			b = f.AppendJSON(make([]byte, 0, f.SizeHint()))
		} else {
			b, err = json.Marshal(reply)
		}
		if err == nil {
			s.enqueue(outFrame{kind: outLabel(frameKind(reply)), data: b})
			// A place told in a reply (entered, position) is watched once the
			// reply is queued, so that no push of the room overtakes it.
			if f, ok := reply.(protocol.Reply); ok && f.Position != nil &&
				(f.Type == protocol.FrameEntered || f.Type == protocol.FramePosition) {
				s.watchPlace(in.Queue, *f.Position)
			}
		}
	}
	if err != nil {
		s.replyError(in.ID, err)
	}
	s.srv.metrics.observeCommand(inLabel(in.Type), time.Since(start))
}

// frameKind is the type of a reply built by dispatch.
func frameKind(v any) string {
	switch f := v.(type) {
	case protocol.Reply:
		return f.Type
	case protocol.State:
		return f.Type
	case protocol.ProviderReply:
		return f.Type
	case protocol.RankingFrame:
		return f.Type
	}
	return ""
}

// dispatch maps a command to a Matchmaker (or Admissions) call and builds
// the reply.
func (s *session) dispatch(ctx context.Context, in protocol.Command) (any, error) {
	mm := s.srv.cfg.Matchmaker
	switch in.Type {
	case protocol.FrameJoin:
		if err := s.srv.admitJoin(ctx, s.p, s.ip, in.Queue, in.Region, in.Attributes); err != nil {
			return nil, err
		}
		t, err := mm.Join(ctx, s.p.joinRequest(in.Queue, in.Region, in.Attributes))
		if err != nil {
			return nil, err
		}
		return protocol.Reply{Type: protocol.FrameJoined, Re: in.ID, Ticket: wireTicket(t)}, nil
	case protocol.FrameCancel:
		if in.TicketID == "" {
			return nil, matcher.Errorf(matcher.CodeBadRequest, "ticketId is required")
		}
		if !validID(in.TicketID) {
			return nil, errNoTicket
		}
		if err := s.srv.limit(ctx, limitCancelUser, s.p.UserID, s.srv.cfg.Limits.CancelsPerUser); err != nil {
			return nil, err
		}
		t, err := mm.Cancel(ctx, s.p.UserID, in.TicketID)
		if err != nil {
			return nil, err
		}
		return protocol.Reply{Type: protocol.FrameCancelled, Re: in.ID, Ticket: wireTicket(t)}, nil
	case protocol.FrameAccept, protocol.FrameDecline:
		if in.MatchID == "" {
			return nil, matcher.Errorf(matcher.CodeBadRequest, "matchId is required")
		}
		if !validID(in.MatchID) {
			return nil, errNoMatch
		}
		if err := s.srv.limit(ctx, limitAcceptUser, s.p.UserID, s.srv.cfg.Limits.AcceptsPerUser); err != nil {
			return nil, err
		}
		call := mm.Accept
		if in.Type == protocol.FrameDecline {
			call = mm.Decline
		}
		m, err := call(ctx, s.p.UserID, in.MatchID)
		if err != nil {
			return nil, err
		}
		return protocol.Reply{Type: protocol.FrameMatchUpdate, Re: in.ID, Match: wireMatch(m)}, nil
	case protocol.FrameStatus:
		if err := s.srv.limit(ctx, limitReadUser, s.p.UserID, s.srv.cfg.Limits.ReadsPerUser); err != nil {
			return nil, err
		}
		st, err := mm.UserState(ctx, s.p.UserID)
		if err != nil {
			return nil, err
		}
		return protocol.StateOf(protocol.FrameStatus, in.ID, st), nil
	case protocol.FrameEnter:
		pos, _, err := s.srv.enter(ctx, s.p, s.ip, in.Queue)
		if err != nil {
			return nil, err
		}
		return protocol.Reply{Type: protocol.FrameEntered, Re: in.ID, Position: &pos}, nil
	case protocol.FramePosition:
		pos, err := s.srv.position(ctx, s.p, in.Queue)
		if err != nil {
			return nil, err
		}
		return protocol.Reply{Type: protocol.FramePosition, Re: in.ID, Position: &pos}, nil
	case protocol.FrameLeave:
		if err := s.srv.leave(ctx, s.p, in.Queue); err != nil {
			return nil, err
		}
		s.srv.room.forget(s.p.UserID, in.Queue)
		return protocol.Reply{Type: protocol.FrameLeft, Re: in.ID}, nil
	case protocol.FramePing:
		return protocol.Reply{Type: protocol.FramePong, Re: in.ID}, nil
	case "":
		return nil, matcher.Errorf(matcher.CodeBadRequest, "type is required")
	}
	return nil, matcher.Errorf(matcher.CodeBadRequest, "unknown message type")
}

// replyError queues an error frame; internal errors are logged and the
// client sees a generic message.
func (s *session) replyError(re string, err error) {
	c := classify(err)
	if c.internal {
		s.srv.log.Error("command failed", slog.Uint64("session", s.id), slog.String("user", s.p.UserID),
			slog.String("re", re), slog.Any("error", err))
	} else if errors.Is(err, context.DeadlineExceeded) {
		s.srv.log.Warn("command timed out", slog.Uint64("session", s.id), slog.String("re", re))
	}
	f := protocol.Reply{Type: protocol.FrameError, Re: re, Error: &c.wire}
	s.enqueue(outFrame{kind: protocol.FrameError, data: f.AppendJSON(make([]byte, 0, f.SizeHint()))})
}
