package main

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	// A drop-in for encoding/json that decodes the frames in about a third
	// of the time: decoding was a quarter of the load generator's CPU,
	// taken from the system it measures.
	json "github.com/segmentio/encoding/json"

	"github.com/matchgate/matchgate/client"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// player is one simulated user. A socket player holds one WebSocket (its
// reader goroutine is the only goroutine it owns); a REST player holds none
// and polls. A player has at most one ticket in flight (the server allows
// one WAITING ticket per user).
type player struct {
	r     *runner
	idx   int
	base  string
	user  string
	token string
	skill float64
	rest  bool

	mu        sync.Mutex
	conn      *websocket.Conn
	connected bool // hello received on conn
	queued    bool // in runner.idle
	att       *attempt
	seq       int
	pending   map[string]request // request id → what it was
	dropping  bool               // a deliberate drop: reconnect at once
	// restUntil: a join refused with a retry-after (a decline's cooldown)
	// keeps the player out of the join pacer until then.
	restUntil time.Time
}

// attempt is one join and what followed it.
type attempt struct {
	id     string // request id of the join
	queue  string
	region string
	sent   time.Time
	ticket string // known once joined (or learned from a hello)
	found  bool   // a match.found answered it (measured once)
	done   bool
	timers []*time.Timer
}

type request struct {
	kind string
	sent time.Time
	att  *attempt
}

// pushFrameType is what push mode publishes on users' channels.
const pushFrameType = "loadgen.push"

// runSocket connects (at the instant the connect pacer chose) and keeps the
// socket until the run closes it, reconnecting after deliberate drops and,
// with --reconnect-on-close, after server closes.
func (p *player) runSocket(ctx context.Context, due time.Time) {
	first := true
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil && !p.r.closing.Load() {
		conn, err := p.connect(ctx, due)
		if err != nil {
			p.r.stats.inc(cConnectFailed)
			kind := dialErrorKind(err)
			p.r.stats.label(lDialErrors, kind)
			p.r.stats.sample(kind, err)
			if first || !p.r.cfg.ReconnectOnClose {
				return
			}
		} else {
			first = false
			backoff = 100 * time.Millisecond
			err = p.readLoop(ctx, conn)
			p.r.stats.add(cSocketsOpen, -1)
			p.mu.Lock()
			dropped := p.dropping
			p.dropping, p.connected, p.conn, p.pending = false, false, nil, nil
			p.mu.Unlock()
			_ = conn.CloseNow()
			if ctx.Err() != nil || p.r.closing.Load() {
				return
			}
			if !dropped {
				p.r.stats.label(lCloses, closeKind(err))
				if !p.r.cfg.ReconnectOnClose {
					return
				}
			}
			p.r.stats.inc(cReconnects)
			if dropped {
				due = time.Now()
				continue
			}
		}
		// Jittered backoff after a failure or a server close.
		sleepCtx(ctx, backoff/2+time.Duration(p.r.rand().Int64N(int64(backoff))))
		backoff = min(2*backoff, 5*time.Second)
		due = time.Now()
	}
}

// closeKind names how a connection ended.
func closeKind(err error) string {
	var te *client.TerminalError
	if errors.As(err, &te) && te.Code != 0 {
		return strconv.Itoa(int(te.Code))
	}
	if code := websocket.CloseStatus(err); code != -1 {
		return strconv.Itoa(int(code))
	}
	return "1006" // no close frame
}

// connect dials, reads hello and reconciles the player's state with it.
func (p *player) connect(ctx context.Context, due time.Time) (*websocket.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, p.r.cfg.ConnectTimeout)
	defer cancel()
	conn, err := p.r.dial.dialWS(cctx, p.base, p.token)
	if err != nil {
		return nil, err
	}
	p.r.stats.hist(hConnect).Record(time.Since(due))
	typ, data, err := conn.Read(cctx)
	if err != nil {
		_ = conn.CloseNow()
		return nil, err
	}
	var f inFrame
	if typ != websocket.MessageText || json.Unmarshal(data, &f) != nil || f.Type != "hello" {
		_ = conn.Close(websocket.StatusPolicyViolation, "expected hello")
		return nil, errors.New("first frame is not hello")
	}
	p.r.stats.hist(hHello).Record(time.Since(due))
	p.r.stats.inc(cConnects)
	p.r.stats.inc(cSocketsOpen)
	p.mu.Lock()
	p.conn, p.connected, p.pending = conn, true, map[string]request{}
	p.helloLocked(&f)
	idle := p.att == nil
	p.mu.Unlock()
	if idle {
		p.r.becameIdle(p)
	}
	return conn, nil
}

// pendingIn reports whether match id is among ms and PENDING_ACCEPT.
func pendingIn(ms []wireMatch, id string) bool {
	for _, m := range ms {
		if m.ID == id {
			return m.State == string(matcher.MatchPendingAccept)
		}
	}
	return false
}

// helloLocked folds the catch-up of a (re)connect into the player's state:
// outcomes it missed while away, and the ticket of a join whose reply was
// lost with the old connection.
func (p *player) helloLocked(f *inFrame) {
	for _, m := range f.Matches {
		if p.r.check.Match(m.ID, seatsOf(m.Players), m.CreatedAt) {
			p.r.stats.inc(cMatches)
		}
	}
	var newest *wireTicket
	for i := range f.Tickets {
		t := &f.Tickets[i]
		p.r.check.Tell(t.ID, p.user, t.Status, t.MatchID, srcHello, time.Now())
		if newest == nil || t.EnqueuedAt.After(newest.EnqueuedAt) {
			newest = t
		}
	}
	a := p.att
	if a == nil {
		return
	}
	if a.ticket == "" {
		// The join was sent on the old connection; if it ran, its ticket is
		// the newest one, enqueued after the join was sent.
		if newest == nil || newest.EnqueuedAt.Before(a.sent.Add(-time.Second)) {
			p.finishLocked(a)
			return
		}
		a.ticket = newest.ID
		p.r.check.Joined(a.ticket, p.user, false)
	}
	for _, t := range f.Tickets {
		if t.ID == a.ticket && t.Status != protocol.StatusWaiting {
			switch {
			case t.Status != protocol.StatusMatched:
				p.endLocked(a)
			case !pendingIn(f.Matches, t.MatchID):
				p.finishLocked(a)
			}
			// A match still waiting for accepts: its match.ready or its
			// dissolve ends the attempt (this player stays silent on it).
		}
	}
}

// readLoop handles frames until the connection ends (or ctx does: the
// connection is closed then). Reads are not given ctx: the library would
// register and drop a watch on it, shared by every socket, for every frame,
// and read each frame into a new buffer; the load generator's CPU is taken
// from the system it measures.
func (p *player) readLoop(ctx context.Context, conn *websocket.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.CloseNow() })
	defer stop()
	var buf bytes.Buffer
	for {
		_, r, err := conn.Reader(context.Background())
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(r)
		}
		if err != nil {
			return err
		}
		data := buf.Bytes()
		recv := time.Now()
		p.r.stats.inc(cFramesIn)
		var f inFrame
		if err := json.Unmarshal(data, &f); err != nil {
			p.r.stats.label(lErrors, "bad_frame")
			continue
		}
		p.handle(&f, recv)
	}
}

// handle applies one frame.
func (p *player) handle(f *inFrame, recv time.Time) {
	st := p.r.stats
	switch f.Type {
	case pushFrameType:
		st.inc(cPushesReceived)
		st.hist(hPush).Record(time.Duration(recv.UnixNano() - f.SentAt))
		return
	case protocol.FrameMatchFound:
		if f.Match != nil {
			p.matchFound(f.Match, recv)
		}
		return
	case protocol.FrameMatchReady:
		if f.Match != nil {
			p.matchReady(f.Match)
		}
		return
	case protocol.FrameMatchDissolved:
		// The players' ticket.update follows: back to WAITING (the attempt
		// goes on) or CANCELLED (it ends).
		if f.Match != nil && p.r.check.Dissolve(f.Match.ID) {
			st.inc(cDissolved)
		}
		return
	case protocol.FrameTicketUpdate:
		if t := f.Ticket; t != nil && t.Status != protocol.StatusWaiting {
			p.r.check.Tell(t.ID, p.user, t.Status, t.MatchID, srcPush, recv)
			p.mu.Lock()
			if a := p.att; a != nil && a.ticket == t.ID && t.Status != protocol.StatusMatched {
				p.endLocked(a)
			}
			p.mu.Unlock()
		}
		return
	}
	// Replies.
	p.mu.Lock()
	req, ok := p.pending[f.Re]
	delete(p.pending, f.Re)
	p.mu.Unlock()
	if f.Type == "error" && f.Error != nil {
		st.label(lErrors, f.Error.Code)
	}
	if !ok {
		return
	}
	switch req.kind {
	case "join":
		p.joinReply(f, req, recv)
	case "cancel":
		p.cancelReply(f, req, recv)
	case "ping":
		if f.Type == "pong" {
			st.inc(cPongs)
			st.hist(hPing).Record(recv.Sub(req.sent))
		}
	}
}

func (p *player) joinReply(f *inFrame, req request, recv time.Time) {
	st := p.r.stats
	a := req.att
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.Type == "joined" && f.Ticket != nil {
		st.inc(cJoined)
		st.hist(hJoined).Record(recv.Sub(req.sent))
		p.r.check.Joined(f.Ticket.ID, p.user, false)
		if a.ticket == "" {
			a.ticket = f.Ticket.ID
		}
		return
	}
	st.inc(cJoinErrors)
	if f.Error != nil && f.Error.Code == string(protocol.CodeAlreadyQueued) && f.Error.TicketID != "" && !a.done {
		// A ticket from before (a reconnect lost its outcome): wait for it.
		a.ticket = f.Error.TicketID
		p.r.check.Joined(a.ticket, p.user, false)
		return
	}
	if f.Error != nil && f.Error.RetryAfter > 0 {
		p.restUntil = recv.Add(time.Duration(f.Error.RetryAfter) * time.Second)
	}
	if p.att == a && a.ticket == "" {
		p.finishLocked(a)
	}
}

func (p *player) cancelReply(f *inFrame, req request, recv time.Time) {
	st := p.r.stats
	a := req.att
	switch {
	case f.Type == "cancelled" && f.Ticket != nil:
		st.inc(cCancelled)
		p.r.check.Tell(f.Ticket.ID, p.user, f.Ticket.Status, "", srcReply, recv)
	case f.Type == "error" && f.Error != nil && f.Error.Code == string(protocol.CodeAlreadyMatched):
		st.inc(cAlreadyMatched)
		p.r.check.Tell(f.Error.TicketID, p.user, string(matcher.StatusMatched), f.Error.MatchID, srcReply, recv)
		// match.found ends the attempt (and is measured); it was pushed
		// before or will be.
		return
	case f.Type == "error" && f.Error != nil && f.Error.Code == string(protocol.CodeAlreadyCancelled):
		p.r.check.Tell(f.Error.TicketID, p.user, statusEnded, "", srcReply, recv)
	default:
		return
	}
	p.mu.Lock()
	if p.att == a {
		p.endLocked(a)
	}
	p.mu.Unlock()
}

// matchFound records a pushed match and ends the attempt it answers.
func (p *player) matchFound(m *wireMatch, recv time.Time) {
	st := p.r.stats
	if p.r.check.Match(m.ID, seatsOf(m.Players), m.CreatedAt) {
		st.inc(cMatches)
	}
	ticket := ""
	for _, s := range m.Players {
		if s.UserID == p.user {
			ticket = s.TicketID
		}
	}
	if ticket == "" {
		st.label(lErrors, "push_for_other_user")
		return
	}
	p.r.check.Tell(ticket, p.user, string(matcher.StatusMatched), m.ID, srcPush, recv)
	pending := m.State == string(matcher.MatchPendingAccept)
	p.mu.Lock()
	a := p.att
	current := a != nil && !a.done && (a.ticket == ticket || a.ticket == "")
	if current {
		if a.ticket == "" {
			a.ticket = ticket // pushed before the joined reply arrived
			p.r.check.Joined(ticket, p.user, false)
		}
		if !a.found {
			// The first match.found is the one measured; after a
			// dissolved match the ticket may be matched again.
			a.found = true
			st.inc(cFound)
			st.hist(hFound).Record(recv.Sub(a.sent))
			// createdAt is stamped at the start of the matching pass, with
			// millisecond precision on the wire.
			st.hist(hPush).Record(time.Since(m.CreatedAt))
		}
		if !pending {
			p.finishLocked(a)
		}
	}
	p.mu.Unlock()
	if current && pending {
		// The attempt goes on until match.ready or the ticket's update
		// after a dissolve.
		p.answerAccept(m.ID)
	}
}

// matchReady ends the attempt whose PENDING_ACCEPT match everyone accepted.
func (p *player) matchReady(m *wireMatch) {
	if p.r.check.Match(m.ID, seatsOf(m.Players), m.CreatedAt) {
		p.r.stats.inc(cMatches)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.att
	if a == nil || a.done {
		return
	}
	for _, s := range m.Players {
		if s.UserID == p.user && s.TicketID == a.ticket {
			p.r.check.Tell(a.ticket, p.user, string(matcher.StatusMatched), m.ID, srcPush, time.Now())
			p.r.stats.inc(cReady)
			p.finishLocked(a)
		}
	}
}

// answerAccept accepts, declines or ignores a PENDING_ACCEPT match.
func (p *player) answerAccept(matchID string) {
	x := p.r.rand().Float64()
	switch {
	case x < p.r.cfg.AcceptFraction:
		p.r.stats.inc(cAccepts)
		p.send("accept", map[string]any{"matchId": matchID}, nil)
	case x < p.r.cfg.AcceptFraction+p.r.cfg.DeclineFraction:
		p.r.stats.inc(cDeclines)
		p.send("decline", map[string]any{"matchId": matchID}, nil)
	default:
		p.r.stats.inc(cSilent)
	}
}

// endLocked finishes an attempt whose ticket ended CANCELLED or EXPIRED,
// counting it once.
func (p *player) endLocked(a *attempt) {
	if !a.done {
		p.r.stats.inc(cEnded)
	}
	p.finishLocked(a)
}

// finishLocked ends an attempt: timers stop, the player is free to join.
func (p *player) finishLocked(a *attempt) {
	if a.done {
		return
	}
	a.done = true
	for _, t := range a.timers {
		t.Stop()
	}
	p.r.stats.add(cWaiting, -1)
	if p.att == a {
		p.att = nil
		if p.connected || p.rest {
			p.enqueueIdleLocked()
		}
	}
}

// enqueueIdleLocked offers the player to the join pacer.
func (p *player) enqueueIdleLocked() {
	if p.queued || !p.r.joinsOpen.Load() {
		return
	}
	if wait := time.Until(p.restUntil); wait > 0 {
		time.AfterFunc(wait, func() { p.r.becameIdle(p) })
		return
	}
	select {
	case p.r.idle <- p:
		p.queued = true
	default:
	}
}

// send writes one command frame; kind "join"/"cancel"/"ping" replies are
// matched by request id.
func (p *player) send(kind string, fields map[string]any, a *attempt) bool {
	p.mu.Lock()
	conn := p.conn
	if conn == nil || !p.connected {
		p.mu.Unlock()
		return false
	}
	p.seq++
	id := kind[:1] + strconv.Itoa(p.seq)
	now := time.Now()
	if kind == "join" || kind == "cancel" || kind == "ping" {
		p.pending[id] = request{kind: kind, sent: now, att: a}
	}
	if kind == "join" {
		a.id, a.sent = id, now
	}
	p.mu.Unlock()
	fields["type"], fields["id"] = kind, id
	b, _ := json.Marshal(fields)
	// Not derived from the run's context, which every socket shares: the
	// run's end closes the connection (readLoop), which ends the write.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		p.r.stats.label(lErrors, "write_failed")
		return false
	}
	return true
}

// join starts an attempt (called by the join pacer with an idle player).
func (p *player) join() bool {
	if p.rest {
		return p.restJoin()
	}
	q := p.r.pickQueue()
	a := &attempt{queue: q.Queue, region: q.Region}
	p.mu.Lock()
	p.queued = false
	if !p.connected || p.att != nil {
		p.mu.Unlock()
		return false
	}
	p.att = a
	p.r.stats.inc(cWaiting)
	p.mu.Unlock()
	fields := map[string]any{"queue": q.Queue}
	if q.Region != "" {
		fields["region"] = q.Region
	}
	if !p.send("join", fields, a) {
		p.mu.Lock()
		p.finishLocked(a)
		p.mu.Unlock()
		return false
	}
	p.r.stats.inc(cJoinsSent)
	p.scheduleBehaviours(a)
	return true
}

// scheduleBehaviours arms this attempt's cancel and drop, by chance.
func (p *player) scheduleBehaviours(a *attempt) {
	cfg := p.r.cfg
	rng := p.r.rand()
	var timers []*time.Timer
	if cfg.CancelFraction > 0 && rng.Float64() < cfg.CancelFraction {
		d := time.Duration(rng.Float64() * float64(cfg.CancelAfter))
		timers = append(timers, time.AfterFunc(d, func() { p.cancel(a) }))
	}
	if !p.rest && cfg.ReconnectFraction > 0 && rng.Float64() < cfg.ReconnectFraction {
		d := time.Duration(rng.Float64() * float64(cfg.ReconnectAfter))
		timers = append(timers, time.AfterFunc(d, func() { p.drop(a) }))
	}
	if len(timers) == 0 {
		return
	}
	p.mu.Lock()
	if a.done {
		for _, t := range timers {
			t.Stop()
		}
	} else {
		a.timers = append(a.timers, timers...)
	}
	p.mu.Unlock()
}

// cancel cancels the attempt's ticket if it is still waiting for it.
func (p *player) cancel(a *attempt) {
	p.mu.Lock()
	ok := p.att == a && !a.done && a.ticket != ""
	ticket := a.ticket
	p.mu.Unlock()
	if !ok {
		return
	}
	p.r.stats.inc(cCancelsSent)
	if p.rest {
		p.restCancel(a, ticket)
		return
	}
	p.send("cancel", map[string]any{"ticketId": ticket}, a)
}

// drop cuts the connection without a close handshake, as a lost network
// would; runSocket reconnects at once and the hello tells what was missed.
func (p *player) drop(a *attempt) {
	p.mu.Lock()
	conn := p.conn
	ok := p.att == a && !a.done && conn != nil
	if ok {
		p.dropping = true
	}
	p.mu.Unlock()
	if ok {
		_ = conn.CloseNow()
	}
}

// ping sends an application ping (the pong is timed).
func (p *player) ping() {
	if p.send("ping", map[string]any{}, nil) {
		p.r.stats.inc(cPings)
	}
}

// closeSocket ends the socket at the end of the run.
func (p *player) closeSocket(timeout time.Duration) {
	p.mu.Lock()
	conn := p.conn
	p.mu.Unlock()
	if conn == nil {
		return
	}
	t := time.AfterFunc(timeout, func() { _ = conn.CloseNow() })
	_ = conn.Close(websocket.StatusNormalClosure, "load test over")
	t.Stop()
}
