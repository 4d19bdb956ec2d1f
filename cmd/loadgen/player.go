package main

import (
	"context"
	"errors"
	"net/http"
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

// player is one simulated user. A socket player holds one WebSocket, a
// client/ Client that does not reconnect by itself (runSocket does, as the
// run's flags say); a REST player holds none and polls. A player has at most one ticket in flight (the server allows
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
	conn      *client.Client
	connected bool // hello received on conn
	queued    bool // in runner.idle
	att       *attempt
	dropping  bool // a deliberate drop: reconnect at once
	// restUntil: a join refused with a retry-after (a decline's cooldown)
	// keeps the player out of the join pacer until then.
	restUntil time.Time
}

// attempt is one join and what followed it.
type attempt struct {
	queue  string
	region string
	sent   time.Time
	ticket string // known once joined (or learned from a hello)
	found  bool   // a match.found answered it (measured once)
	done   bool
	timers []*time.Timer
}

// pushFrameType is what push mode publishes on users' channels.
const pushFrameType = "loadgen.push"

// runSocket connects (at the instant the connect pacer chose) and returns
// once the socket is open, or the player gives up. No goroutine of the
// player waits while its socket is open (a goroutine a socket is memory
// the load generator takes from the system it measures): the socket's end
// starts ended, which reconnects after deliberate drops and, with
// --reconnect-on-close, after server closes.
func (p *player) runSocket(ctx context.Context, due time.Time) {
	p.connectLoop(ctx, due, true, 100*time.Millisecond)
}

// connectLoop connects, retrying after failures with jittered backoff
// unless this is the first connect or --reconnect-on-close is off.
func (p *player) connectLoop(ctx context.Context, due time.Time, first bool, backoff time.Duration) {
	for ctx.Err() == nil && !p.r.closing.Load() {
		err := p.connect(ctx, due)
		if err == nil {
			return
		}
		p.r.stats.inc(cConnectFailed)
		kind := dialErrorKind(err)
		p.r.stats.label(lDialErrors, kind)
		p.r.stats.sample(kind, err)
		if first || !p.r.cfg.ReconnectOnClose {
			return
		}
		sleepCtx(ctx, backoff/2+time.Duration(p.r.rand().Int64N(int64(backoff))))
		backoff = min(2*backoff, 5*time.Second)
		due = time.Now()
	}
}

// ended follows a socket's end (err: why, from the client), on its own
// goroutine, counted in the run's wait group since connect.
func (p *player) ended(ctx context.Context, err error) {
	defer p.r.wg.Done()
	p.r.stats.add(cSocketsOpen, -1)
	p.mu.Lock()
	dropped := p.dropping
	p.dropping, p.connected, p.conn = false, false, nil
	p.mu.Unlock()
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
	backoff := 100 * time.Millisecond
	if !dropped {
		// Jittered backoff after a server close.
		sleepCtx(ctx, backoff/2+time.Duration(p.r.rand().Int64N(int64(backoff))))
		backoff *= 2
	}
	p.connectLoop(ctx, time.Now(), false, backoff)
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

// replyWait bounds a command's wait for its reply. A reply is waited for
// as long as its socket lives (the socket's end fails the command), as a
// reply that comes late is still measured.
const replyWait = time.Hour

// connect dials through client/ and returns once the hello is read and
// folded into the player's state; the socket's end then starts ended. The
// client does not reconnect (the player does) and keeps out of the way of
// what is measured: no pings of its own (the server pings), no REST
// heartbeats, no events read; every frame is seen as read (onFrame) and
// checked there. The run's end (ctx) cuts the socket.
func (p *player) connect(ctx context.Context, due time.Time) error {
	cctx, cancel := context.WithTimeout(ctx, p.r.cfg.ConnectTimeout)
	defer cancel()
	st := &upgradeStatus{rt: p.r.dial.ws.Transport}
	sock := &socketFrames{p: p, due: due, ready: make(chan struct{})}
	var stopCut func() bool
	c, err := client.Dial(cctx, p.base, client.StaticToken(p.token), &client.Options{
		HTTPClient:  &http.Client{Transport: st},
		DialTimeout: p.r.cfg.ConnectTimeout, RequestTimeout: replyWait,
		PingInterval: -1, HeartbeatInterval: -1, DisableReconnect: true, EventBuffer: 1,
		OnSession: func(s client.Session) {
			switch {
			case s.Up:
				p.r.stats.hist(hConnect).Record(s.At.Sub(due))
			case sock.helloOK:
				// The end of a socket Dial returned (a socket whose hello
				// was read is one): after connect is done with it.
				go func() {
					<-sock.ready
					if sock.taken {
						stopCut()
						p.ended(ctx, s.Err)
					}
				}()
			}
		},
		OnFrame: sock.frame,
	})
	if err != nil {
		close(sock.ready)
		if st.status != 0 && st.status != http.StatusSwitchingProtocols {
			return &httpError{status: st.status, err: err}
		}
		return err
	}
	sock.taken = true
	p.r.wg.Add(1) // done by ended
	stopCut = context.AfterFunc(ctx, c.Drop)
	p.r.stats.inc(cConnects)
	p.r.stats.inc(cSocketsOpen)
	p.mu.Lock()
	p.conn, p.connected = c, true
	idle := p.att == nil
	p.mu.Unlock()
	close(sock.ready)
	if idle {
		p.r.becameIdle(p)
	}
	return nil
}

// upgradeStatus is the transport of one dial, noting the upgrade's HTTP
// status (a refusal such as 503 is reported by it).
type upgradeStatus struct {
	rt     http.RoundTripper
	status int
}

func (u *upgradeStatus) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := u.rt.RoundTrip(req)
	if resp != nil {
		u.status = resp.StatusCode
	}
	return resp, err
}

// socketFrames checks and applies the frames of one socket as read
// (client.Options.OnFrame: on the socket's reader, never blocking). The
// first is the hello.
type socketFrames struct {
	p       *player
	due     time.Time
	hello   bool          // the first frame was read
	helloOK bool          // and was a hello: Dial returns the socket
	ready   chan struct{} // closed once connect is done with Dial's answer
	taken   bool          // Dial returned the socket (set before ready)
}

func (s *socketFrames) frame(data []byte, at time.Time) {
	p := s.p
	var f inFrame
	err := json.Unmarshal(data, &f)
	if !s.hello {
		// The client refuses a socket whose first frame is not a hello.
		s.hello = true
		if err == nil && f.Type == protocol.FrameHello {
			s.helloOK = true
			p.r.stats.hist(hHello).Record(at.Sub(s.due))
			p.mu.Lock()
			p.helloLocked(&f)
			p.mu.Unlock()
		}
		return
	}
	p.r.stats.inc(cFramesIn)
	if err != nil {
		p.r.stats.label(lErrors, "bad_frame")
		return
	}
	p.handle(&f, at)
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
	// Replies: each is also handed to the command that waits for it.
	if f.Type == protocol.FrameError && f.Error != nil {
		st.label(lErrors, f.Error.Code)
	}
}

// joinReply applies a join's outcome, received at recv. An error that is
// not the server's means no reply (the socket went): the next hello
// tells what became of the join.
func (p *player) joinReply(t client.Ticket, err error, a *attempt, recv time.Time) {
	st := p.r.stats
	var e *client.Error
	if err != nil && !errors.As(err, &e) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && t.ID != "" {
		st.inc(cJoined)
		st.hist(hJoined).Record(recv.Sub(a.sent))
		p.r.check.Joined(t.ID, p.user, false)
		if a.ticket == "" {
			a.ticket = t.ID
		}
		return
	}
	st.inc(cJoinErrors)
	if e != nil && e.Code == protocol.CodeAlreadyQueued && e.TicketID != "" && !a.done {
		// A ticket from before (a reconnect lost its outcome): wait for it.
		a.ticket = e.TicketID
		p.r.check.Joined(a.ticket, p.user, false)
		return
	}
	if e != nil && e.RetryAfter > 0 {
		p.restUntil = recv.Add(e.RetryAfter)
	}
	if p.att == a && a.ticket == "" {
		p.finishLocked(a)
	}
}

// cancelReply applies a cancel's outcome, received at recv.
func (p *player) cancelReply(t client.Ticket, err error, a *attempt, recv time.Time) {
	st := p.r.stats
	var e *client.Error
	errors.As(err, &e)
	switch {
	case err == nil && t.ID != "":
		st.inc(cCancelled)
		p.r.check.Tell(t.ID, p.user, t.Status, "", srcReply, recv)
	case e != nil && e.Code == protocol.CodeAlreadyMatched:
		st.inc(cAlreadyMatched)
		p.r.check.Tell(e.TicketID, p.user, string(matcher.StatusMatched), e.MatchID, srcReply, recv)
		// match.found ends the attempt (and is measured); it was pushed
		// before or will be.
		return
	case e != nil && e.Code == protocol.CodeAlreadyCancelled:
		p.r.check.Tell(e.TicketID, p.user, statusEnded, "", srcReply, recv)
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
		p.command(func(ctx context.Context, c *client.Client) { _, _ = c.Accept(ctx, matchID) })
	case x < p.r.cfg.AcceptFraction+p.r.cfg.DeclineFraction:
		p.r.stats.inc(cDeclines)
		p.command(func(ctx context.Context, c *client.Client) { _, _ = c.Decline(ctx, matchID) })
	default:
		p.r.stats.inc(cSilent)
	}
}

// command runs a command whose reply nobody waits for (an error reply is
// counted as it is read), off the socket's reader.
func (p *player) command(run func(context.Context, *client.Client)) {
	if c := p.socket(); c != nil {
		p.r.wg.Go(func() { run(context.Background(), c) })
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

// socket is the player's client while its socket is connected, else nil.
func (p *player) socket() *client.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.connected {
		return nil
	}
	return p.conn
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
	c := p.conn
	if !p.connected || p.att != nil {
		p.mu.Unlock()
		return false
	}
	p.att = a
	a.sent = time.Now()
	p.r.stats.inc(cWaiting)
	p.mu.Unlock()
	p.r.stats.inc(cJoinsSent)
	p.scheduleBehaviours(a)
	t, err := c.Join(context.Background(), q.Queue, client.JoinOptions{Region: q.Region})
	p.joinReply(t, err, a, time.Now())
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
	if p.rest {
		p.r.stats.inc(cCancelsSent)
		p.restCancel(a, ticket)
		return
	}
	c := p.socket()
	if c == nil {
		return
	}
	p.r.stats.inc(cCancelsSent)
	t, err := c.Cancel(context.Background(), ticket)
	p.cancelReply(t, err, a, time.Now())
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
		conn.Drop()
	}
}

// ping sends an application ping (the pong is timed).
func (p *player) ping() {
	c := p.socket()
	if c == nil {
		return
	}
	p.r.stats.inc(cPings)
	sent := time.Now()
	if err := c.Ping(context.Background()); err == nil {
		p.r.stats.inc(cPongs)
		p.r.stats.hist(hPing).Record(time.Since(sent))
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
	// Close's handshake is given timeout; then the socket is cut.
	t := time.AfterFunc(timeout, conn.Drop)
	_ = conn.Close()
	t.Stop()
}
