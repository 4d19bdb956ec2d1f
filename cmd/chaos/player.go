package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/matchgate/matchgate/client"
)

// sim is what every player shares: the run's settings and the live count of
// connected players (the end of the run waits for stragglers).
type sim struct {
	o         options
	queues    []queueSpec
	gateways  []string
	joinStop  time.Time // no join is sent after this
	connected atomic.Int64
	gaveUp    atomic.Int64
	retired   atomic.Pointer[string] // the queue retired mid-run, once it is
}

// player is one simulated player: it connects, joins, sometimes cancels,
// sometimes drops its socket (briefly, or for longer than the heartbeat
// timeout: a ghost), reconnects after server-side closes with jittered
// backoff, and records everything. Only its own goroutine touches it.
type player struct {
	sim   *sim
	user  string
	token string
	rng   *rand.Rand
	rec   *playerRec
	gw    int // index of the gateway to dial next

	session       int
	current       string // the WAITING ticket the player knows of
	pendingJoin   *sentRec
	pendingCancel *sentRec
	joins         int
	nextJoin      time.Time
	cancelTicket  string // the ticket the planned cancel is for
	cancelAt      time.Time
	cancelTries   int
	stubborn      bool // the planned cancel goes out even if the ticket is over
	repeat        bool // cancel the same ticket again once answered (a double click)
	dropAt        time.Time
	away          time.Duration
	ghost         bool
}

// Behaviour of a player, per ticket.
const (
	pFastCancel = 0.08 // cancel within 300 ms: races the claim
	pCancel     = 0.20 // cancel at some point (including the fast ones)
	pStubborn   = 0.5  // of those, cancel even after learning the outcome (ALREADY_MATCHED, ALREADY_CANCELLED)
	pRepeat     = 0.25 // of those, cancel twice (ALREADY_CANCELLED)
	pGhost      = 0.03 // drop and stay away longer than the heartbeat timeout
	pDrop       = 0.13 // drop and come back within 2 s (including ghosts)

	maxDialFailures = 100              // in a row; then the player gives up
	maxSessions     = 500              // per player; then the player gives up
	requestTimeout  = 20 * time.Second // a reply that takes longer is a violation
	helloTimeout    = 10 * time.Second
)

func (p *player) uniform(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(p.rng.Int64N(int64(hi-lo)))
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff is the jittered exponential wait after the n-th failure in a row.
func (p *player) backoff(n int) time.Duration {
	d := 100 * time.Millisecond << min(n, 5)
	d = min(d, 2*time.Second)
	return p.uniform(d/2, d)
}

// run plays until ctx ends. arrival spreads the players' first connection.
func (p *player) run(ctx context.Context, arrival time.Duration) {
	if !sleepCtx(ctx, arrival) {
		return
	}
	failures := 0
	for ctx.Err() == nil {
		w, err := p.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			p.rec.DialFailures++
			if failures >= maxDialFailures {
				p.giveUp(fmt.Sprintf("%d connects in a row failed, the last with: %v", failures, err))
				return
			}
			p.gw = (p.gw + 1) % len(p.sim.gateways) // try the other gateway
			sleepCtx(ctx, p.backoff(failures))
			continue
		}
		failures = 0
		if p.session >= maxSessions {
			w.close()
			p.endSession(w, "stop", time.Now())
			p.giveUp(fmt.Sprintf("%d sessions: the reconnect budget is spent", p.session))
			return
		}
		end, away := p.play(ctx, w)
		switch end {
		case "stop":
			return
		case "lost":
			// The server side went away (a killed gateway): reconnect after
			// a jittered pause, to the other gateway.
			p.gw = (p.gw + 1) % len(p.sim.gateways)
			sleepCtx(ctx, p.backoff(0))
		default: // drop, ghost
			sleepCtx(ctx, away)
		}
	}
}

func (p *player) giveUp(why string) {
	p.rec.GaveUp, p.rec.GaveUpWhy = true, why
	p.sim.gaveUp.Add(1)
}

// connect dials a gateway and reads hello, which must come first.
func (p *player) connect(ctx context.Context) (*wsConn, error) {
	dialed := time.Now()
	w, first, err := dialWS(ctx, p.sim.gateways[p.gw], p.token)
	if err != nil {
		if first != nil {
			// The client refuses such a socket; the run still tells.
			f, _ := decodeFrame(first)
			p.rec.Anomalies = append(p.rec.Anomalies, fmt.Sprintf("session %d: first frame is %q, not hello", p.session+1, f.Type))
		}
		return nil, err
	}
	timer := time.NewTimer(helloTimeout)
	defer timer.Stop()
	select {
	case rx, ok := <-w.frames:
		if !ok {
			w.drop()
			return nil, fmt.Errorf("socket to %s closed before hello", w.addr)
		}
		p.session++
		p.pendingJoin, p.pendingCancel = nil, nil // their replies went with the old socket
		s := sessionRec{N: p.session, Gateway: w.addr, Dialed: dialed, Hello: rx.at}
		f := p.receive(rx)
		if f.Type != frameHello {
			p.rec.Anomalies = append(p.rec.Anomalies, fmt.Sprintf("session %d: first frame is %q, not hello", p.session, f.Type))
		}
		s.Node = f.Node
		p.rec.Sessions = append(p.rec.Sessions, s)
		p.sim.connected.Add(1)
		return w, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	w.drop()
	for range w.frames {
	}
	return nil, fmt.Errorf("no hello from %s within %s", w.addr, helloTimeout)
}

// endSession records how the current session ended and drains the socket.
func (p *player) endSession(w *wsConn, reason string, at time.Time) {
	for rx := range w.frames {
		p.receive(rx)
	}
	s := &p.rec.Sessions[len(p.rec.Sessions)-1]
	s.End, s.EndReason = at, reason
	p.sim.connected.Add(-1)
}

// play runs one session until the socket ends; it says why, and for a
// voluntary drop how long to stay away.
func (p *player) play(ctx context.Context, w *wsConn) (string, time.Duration) {
	for {
		timer := time.NewTimer(p.nextWake(time.Now()))
		select {
		case <-ctx.Done():
			timer.Stop()
			now := time.Now()
			w.close()
			p.endSession(w, "stop", now)
			return "stop", 0
		case rx, ok := <-w.frames:
			timer.Stop()
			if !ok {
				p.rec.Lost++
				p.endSession(w, "lost", time.Now())
				return "lost", 0
			}
			p.receive(rx)
		case <-timer.C:
		}
		now := time.Now()
		if !p.dropAt.IsZero() && !now.Before(p.dropAt) {
			reason, away := "drop", p.away
			if p.ghost {
				reason = "ghost"
				p.rec.Ghosts++
			} else {
				p.rec.Drops++
			}
			p.dropAt, p.ghost = time.Time{}, false
			w.drop()
			p.endSession(w, reason, now)
			return reason, away
		}
		if err := p.act(w, now); err != nil {
			p.rec.Lost++
			w.drop()
			p.endSession(w, "lost", now)
			return "lost", 0
		}
	}
}

// nextWake is how long to wait for a frame before acting: until the next
// planned action, at most a second.
func (p *player) nextWake(now time.Time) time.Duration {
	d := time.Second
	for _, t := range []time.Time{p.dropAt, p.cancelAt, p.nextJoin} {
		if !t.IsZero() && t.Sub(now) < d {
			d = t.Sub(now)
		}
	}
	return max(d, 5*time.Millisecond)
}

// act sends what is due: a cancel, a join; and gives up on replies that
// never came.
func (p *player) act(w *wsConn, now time.Time) error {
	if p.pendingJoin != nil && now.Sub(p.pendingJoin.At) > requestTimeout {
		p.rec.Unanswered = append(p.rec.Unanswered, *p.pendingJoin)
		p.pendingJoin, p.nextJoin = nil, now
	}
	if p.pendingCancel != nil && now.Sub(p.pendingCancel.At) > requestTimeout {
		p.rec.Unanswered = append(p.rec.Unanswered, *p.pendingCancel)
		p.pendingCancel = nil
	}
	if p.cancelTicket != "" && p.pendingCancel == nil && !p.cancelAt.IsZero() && !now.Before(p.cancelAt) {
		p.cancelAt = time.Time{}
		p.cancelTries++
		req := p.newReq(now, "cancel", "", p.cancelTicket)
		p.pendingCancel = req
		ticket := req.TicketID
		return w.run(func(ctx context.Context, c *client.Client) { _, _ = c.Cancel(ctx, ticket) })
	}
	if p.current == "" && p.pendingJoin == nil && p.joins < p.sim.o.MaxJoins &&
		!now.Before(p.nextJoin) && now.Before(p.sim.joinStop) {
		p.joins++
		req := p.newReq(now, "join", p.pickQueue(), "")
		p.pendingJoin = req
		queue := req.Queue
		return w.run(func(ctx context.Context, c *client.Client) { _, _ = c.Join(ctx, queue, client.JoinOptions{}) })
	}
	return nil
}

// newReq is a request about to be sent; its id is the client's, known
// once it is written (sent), when it is recorded.
func (p *player) newReq(now time.Time, typ, queue, ticket string) *sentRec {
	return &sentRec{At: now, Session: p.session, Type: typ, Queue: queue, TicketID: ticket}
}

// pickQueue draws a queue by weight, among those not retired.
func (p *player) pickQueue() string {
	retired := ""
	if r := p.sim.retired.Load(); r != nil {
		retired = *r
	}
	total, last := 0.0, ""
	for _, q := range p.sim.queues {
		if q.Name != retired {
			total, last = total+q.Weight, q.Name
		}
	}
	x := p.rng.Float64() * total
	for _, q := range p.sim.queues {
		if q.Name == retired {
			continue
		}
		if x < q.Weight {
			return q.Name
		}
		x -= q.Weight
	}
	return last
}

// errSocketOver: a command was due on a socket that has ended.
var errSocketOver = errors.New("the socket has ended")

// run starts a command on w; its frame and reply come on w.frames.
func (w *wsConn) run(cmd func(context.Context, *client.Client)) error {
	if !w.command(cmd) {
		return errSocketOver
	}
	return nil
}
