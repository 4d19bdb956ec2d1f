package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgate/matchgate/client"
	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/protocol"
)

// The admission part of the run (docs/CHAOS.md: waiters, downstream, checks):
// waiters enter the gate queue over REST or the socket, poll or hold their
// sockets, some leave or walk away; a downstream claims, releases and
// consumes their tokens with the admin token. Everything they are told and
// every answer the downstream gets is recorded for the checks.

// gateQueue is the run's admission queue.
const gateQueue = "gate"

// Behaviour of a waiter, per place.
const (
	aREST         = 0.45 // enter and poll over REST; the others hold a socket
	aLeave        = 0.08 // leave while waiting
	aWalkAway     = 0.05 // stop asking (close the socket, stop polling) and never come back: ABANDONED unless admitted first
	aDrop         = 0.10 // a socket dropped without a close handshake, back within 2 s
	maxEntries    = 4    // places per waiter at most
	wsPoll        = 4 * time.Second
	restPollFloor = 500 * time.Millisecond
	restPollCap   = 1500 * time.Millisecond
)

// Plans of the downstream, per token.
const (
	dSkip          = 0.10 // never claimed: the token's life ends (EXPIRED)
	dRelease       = 0.25 // claimed, released (rolled back), claimed again, consumed
	dConsumeTwice  = 0.33 // below it (the released ones too): consumed, then consumed and claimed again, both must be refused
	downstreamPool = 16
)

// tokenSeen is one token a waiter was told, and how.
type tokenSeen struct {
	At    time.Time `json:"at"`
	Token string    `json:"token"`
	Via   string    `json:"via"` // rest-enter, rest-position, entered, position, admission.ready, admission.position, hello
}

// waiterRec is what one waiter did and was told.
type waiterRec struct {
	User string `json:"user"`

	mu         sync.Mutex
	Entries    int         `json:"entries"` // enter requests answered with a place
	Leaves     int         `json:"leaves"`  // leave requests sent
	WalkedAway bool        `json:"walkedAway"`
	Tokens     []tokenSeen `json:"tokens"`
	// Ended are the places the waiter saw end (NOT_ENTERED after WAITING)
	// without leaving them: abandoned, which needs an absence.
	Ended []endSeen `json:"ended"`
}

// endSeen is a place a waiter saw end while it was still asking for it.
type endSeen struct {
	Via string    `json:"via"` // rest or ws
	At  time.Time `json:"at"`  // the NOT_ENTERED answer's arrival
	// REST: when the last request answered WAITING was sent (the server
	// saw the waiter at or after it). WS: when the socket was opened and
	// when its last reply said WAITING.
	Seen       time.Time `json:"seen"`
	SocketFrom time.Time `json:"socketFrom,omitzero"`
}

func (r *waiterRec) ended(e endSeen) {
	r.mu.Lock()
	r.Ended = append(r.Ended, e)
	r.mu.Unlock()
}

func (r *waiterRec) told(token, via string) {
	if token == "" {
		return
	}
	r.mu.Lock()
	r.Tokens = append(r.Tokens, tokenSeen{At: time.Now(), Token: token, Via: via})
	r.mu.Unlock()
}

// dsRec is what the downstream did with one token: the answers it got,
// 200s counted by call.
type dsRec struct {
	Token string
	User  string // the waiter it came from
	// Claims, Releases and Consumes count 200 answers; Sent every call
	// sent (retries included).
	Claims, Releases, Consumes int
	Sent                       int
	Users                      map[string]bool // userId of the 200 answers
	Codes                      map[string]int  // "<call> <status> <code>" of the refusals
}

type tokenJob struct {
	token, user string
	done        chan struct{}
}

// admSim is what the waiters and the downstream share.
type admSim struct {
	o        options
	gateways []string
	admin    string
	client   *http.Client
	joinStop time.Time

	jobs     chan tokenJob
	inFlight atomic.Int64 // tokens handed to the downstream, not yet done with

	mu     sync.Mutex
	ds     map[string]*dsRec
	handed map[string]chan struct{} // token -> closed when the downstream is done with it

	entries, pushesReady, pollsReady atomic.Int64
}

func newAdmSim(o options, gateways []string, admin string, joinStop time.Time) *admSim {
	return &admSim{o: o, gateways: gateways, admin: admin, joinStop: joinStop,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		jobs:   make(chan tokenJob, 1<<16), ds: map[string]*dsRec{}, handed: map[string]chan struct{}{}}
}

// waiter is one simulated user of the admission queue; only its own
// goroutine touches it (its record is locked for the checks' reads).
type waiter struct {
	s     *admSim
	user  string
	token string
	rng   *rand.Rand
	rec   *waiterRec
	gw    int

	// The socket's state for the place it follows (wsPlace).
	sockFrom, lastWaiting time.Time
	leaveSent             bool
}

func newWaiters(s *admSim, o options, secret []byte) ([]*waiter, error) {
	now := time.Now()
	ws := make([]*waiter, o.Waiters)
	for i := range ws {
		user := fmt.Sprintf("gate-%d", i)
		tok, err := gateway.MintToken(secret, user, nil, 24*time.Hour, now)
		if err != nil {
			return nil, err
		}
		ws[i] = &waiter{s: s, user: user, token: tok, gw: i % len(s.gateways),
			rng: rand.New(rand.NewPCG(o.Seed, uint64(i)+0xadd1)), rec: &waiterRec{User: user}}
	}
	return ws, nil
}

func (w *waiter) uniform(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

// run enters up to maxEntries places, one after the other, until the load
// ends; the place held then is followed until ctx ends (the settle).
func (w *waiter) run(ctx context.Context, arrival time.Duration) {
	if !sleepCtx(ctx, arrival) {
		return
	}
	for n := 0; n < maxEntries && time.Now().Before(w.s.joinStop); n++ {
		var away bool
		if w.rng.Float64() < aREST {
			away = w.restPlace(ctx)
		} else {
			away = w.wsPlace(ctx)
		}
		if away || ctx.Err() != nil {
			return
		}
		if !sleepCtx(ctx, w.uniform(200*time.Millisecond, time.Second)) {
			return
		}
	}
}

// fate draws what the waiter does with one place: leave at leaveAt, or
// walk away at awayAt (zero: neither).
func (w *waiter) fate() (leaveAt, awayAt time.Time) {
	r := w.rng.Float64()
	now := time.Now()
	switch {
	case r < aLeave:
		leaveAt = now.Add(w.uniform(0, 4*time.Second))
	case r < aLeave+aWalkAway:
		awayAt = now.Add(w.uniform(0, 2*time.Second))
	}
	return
}

// loading reports whether the load phase is on: leaves and walk-aways
// happen only then, so that the settle drains the line.
func (w *waiter) loading() bool { return time.Now().Before(w.s.joinStop) }

// handOff gives a token to the downstream (once per token) and waits until
// it is done with it or ctx ends.
func (w *waiter) handOff(ctx context.Context, token string) {
	done := w.s.hand(ctx, token, w.user)
	select {
	case <-ctx.Done():
	case <-done:
	}
}

// --- REST ---

func (w *waiter) restPlace(ctx context.Context) (away bool) {
	pos, sent, ok := w.restCall(ctx, http.MethodPost, "/enter", "rest-enter")
	if !ok {
		return false
	}
	w.rec.mu.Lock()
	w.rec.Entries++
	w.rec.mu.Unlock()
	w.s.entries.Add(1)
	leaveAt, awayAt := w.fate()
	var seen time.Time // the send of the last request answered WAITING
	for {
		switch pos.Status {
		case protocol.PositionReady:
			w.handOff(ctx, pos.Token)
			return false
		case protocol.PositionNotEntered:
			if !seen.IsZero() {
				w.rec.ended(endSeen{Via: "rest", At: time.Now(), Seen: seen})
			}
			return false
		case protocol.PositionWaiting:
			seen = sent
		}
		now := time.Now()
		if !leaveAt.IsZero() && now.After(leaveAt) && w.loading() {
			w.rec.mu.Lock()
			w.rec.Leaves++
			w.rec.mu.Unlock()
			w.restCall(ctx, http.MethodDelete, "", "")
			return false
		}
		if !awayAt.IsZero() && now.After(awayAt) && w.loading() {
			w.rec.mu.Lock()
			w.rec.WalkedAway = true
			w.rec.mu.Unlock()
			return true
		}
		wait := min(max(time.Duration(pos.PollAfter*float64(time.Second)), restPollFloor), restPollCap)
		if !sleepCtx(ctx, w.uniform(wait/2, wait)) {
			return false
		}
		next, at, ok := w.restCall(ctx, http.MethodGet, "/position", "rest-position")
		if !ok {
			return false
		}
		pos, sent = next, at
	}
}

// restCall sends one waiter request, retried on the other gateway while
// the answer is a transport failure, a 5xx or a rate limit, until ctx
// ends. It returns the position of a 2xx answer (a leave's NOT_ENTERED)
// and when the request that got it was sent.
func (w *waiter) restCall(ctx context.Context, method, suffix, via string) (protocol.ClientPosition, time.Time, bool) {
	backoff := 100 * time.Millisecond
	for {
		sent := time.Now()
		addr := w.s.gateways[w.gw]
		var body io.Reader
		if method == http.MethodPost {
			body = bytes.NewReader([]byte("{}"))
		}
		status, b, err := w.s.do(ctx, method, "http://"+addr+"/v1/admission/"+gateQueue+suffix, w.token, body)
		if ctx.Err() != nil {
			return protocol.ClientPosition{}, sent, false
		}
		if err == nil && status/100 == 2 {
			var pb struct {
				Position protocol.ClientPosition `json:"position"`
			}
			if json.Unmarshal(b, &pb) != nil {
				return protocol.ClientPosition{}, sent, false
			}
			if pb.Position.Status == protocol.PositionReady {
				w.rec.told(pb.Position.Token, via)
				w.s.pollsReady.Add(1)
			}
			return pb.Position, sent, true
		}
		if err == nil && status == http.StatusNotFound && method == http.MethodDelete {
			return protocol.ClientPosition{}, sent, false // nothing to leave: admitted meanwhile
		}
		if err == nil && status/100 == 4 && status != http.StatusTooManyRequests {
			return protocol.ClientPosition{}, sent, false
		}
		if err != nil || status/100 == 5 {
			w.gw = (w.gw + 1) % len(w.s.gateways)
		}
		if !sleepCtx(ctx, w.uniform(backoff/2, backoff)) {
			return protocol.ClientPosition{}, sent, false
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// --- WebSocket ---

// helloPlaces is the admission member of hello (protocol.ClientFrame has
// none: the run decodes it itself).
type helloPlaces struct {
	Admission []struct {
		Queue    string                  `json:"queue"`
		Position protocol.ClientPosition `json:"position"`
	} `json:"admission"`
}

// wsPlace enters over a socket and follows the place by its pushes (and a
// position every wsPoll, as a careful client does), reconnecting when the
// socket ends, until the token is known, the place ends or the waiter
// leaves or walks away.
func (w *waiter) wsPlace(ctx context.Context) (away bool) {
	leaveAt, awayAt := w.fate()
	var dropAt time.Time
	if w.rng.Float64() < aDrop {
		dropAt = time.Now().Add(w.uniform(0, 3*time.Second))
	}
	entered := false
	w.leaveSent = false
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		w.sockFrom, w.lastWaiting = time.Now(), time.Time{}
		c, _, err := dialWS(ctx, w.s.gateways[w.gw], w.token)
		if err != nil {
			w.gw = (w.gw + 1) % len(w.s.gateways)
			if !sleepCtx(ctx, w.uniform(backoff/2, backoff)) {
				return false
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		res := w.wsSession(ctx, c, &entered, &leaveAt, &awayAt, &dropAt)
		switch res {
		case wsDone:
			c.close()
			drain(c)
			return false
		case wsAway:
			c.drop()
			drain(c)
			return true
		case wsDropped:
			c.drop()
			drain(c)
			if !sleepCtx(ctx, w.uniform(100*time.Millisecond, 2*time.Second)) {
				return false
			}
		case wsLost:
			drain(c)
			w.gw = (w.gw + 1) % len(w.s.gateways)
			if !sleepCtx(ctx, w.uniform(50*time.Millisecond, 500*time.Millisecond)) {
				return false
			}
		}
	}
	return false
}

func drain(c *wsConn) {
	for range c.frames {
	}
}

type wsResult int

const (
	wsDone    wsResult = iota // the place is over for the waiter (token handed, ended, left)
	wsAway                    // walked away
	wsDropped                 // dropped on purpose, coming back
	wsLost                    // the socket ended (a gateway went away)
)

func (w *waiter) wsSession(ctx context.Context, c *wsConn, entered *bool, leaveAt, awayAt, dropAt *time.Time) wsResult {
	// A command goes from its own goroutine (the client waits for its
	// reply); the reply is read on c.frames, as every frame is.
	send := func(typ string) bool {
		return c.command(func(ctx context.Context, cl *client.Client) {
			switch typ {
			case protocol.FrameEnter:
				_, _ = cl.Enter(ctx, gateQueue)
			case protocol.FramePosition:
				_, _ = cl.Position(ctx, gateQueue)
			case protocol.FrameLeave:
				_ = cl.Leave(ctx, gateQueue)
			}
		})
	}
	// The first command: enter, or after a reconnect ask for the place
	// (hello lists it too).
	first := protocol.FrameEnter
	if *entered {
		first = protocol.FramePosition
	}
	if !send(first) {
		return wsLost
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastAsk := time.Now()
	for {
		select {
		case <-ctx.Done():
			return wsDone
		case f, ok := <-c.frames:
			if !ok {
				return wsLost
			}
			if f.sent {
				continue // a command as written: the waiter reads replies
			}
			r := w.wsFrame(ctx, f.raw, entered)
			switch r {
			case wsFrameDone:
				return wsDone
			case wsFrameRetry:
				if !sleepCtx(ctx, w.uniform(300*time.Millisecond, time.Second)) || !send(first) {
					return wsLost
				}
			}
		case <-tick.C:
			now := time.Now()
			if !*entered {
				if now.Sub(lastAsk) > 10*time.Second { // unanswered: ask again
					lastAsk = now
					if !send(protocol.FrameEnter) {
						return wsLost
					}
				}
				continue
			}
			first = protocol.FramePosition
			if !leaveAt.IsZero() && now.After(*leaveAt) && w.loading() {
				*leaveAt = time.Time{}
				w.leaveSent = true
				w.rec.mu.Lock()
				w.rec.Leaves++
				w.rec.mu.Unlock()
				send(protocol.FrameLeave)
				continue // the left reply (or an error) ends the place
			}
			if !awayAt.IsZero() && now.After(*awayAt) && w.loading() {
				w.rec.mu.Lock()
				w.rec.WalkedAway = true
				w.rec.mu.Unlock()
				return wsAway
			}
			if !dropAt.IsZero() && now.After(*dropAt) {
				*dropAt = time.Time{}
				return wsDropped
			}
			if now.Sub(lastAsk) >= wsPoll {
				lastAsk = now
				if !send(protocol.FramePosition) {
					return wsLost
				}
			}
		}
	}
}

type wsFrameResult int

const (
	wsFrameGoOn wsFrameResult = iota
	wsFrameDone
	wsFrameRetry // the first command was refused for now: send it again
)

func (w *waiter) wsFrame(ctx context.Context, raw []byte, entered *bool) wsFrameResult {
	f, err := decodeFrame(raw)
	if err != nil {
		return wsFrameGoOn
	}
	var pos *protocol.ClientPosition
	switch f.Type {
	case frameHello:
		var h helloPlaces
		if json.Unmarshal(raw, &h) == nil {
			for _, p := range h.Admission {
				if p.Queue == gateQueue && p.Position.Status == protocol.PositionReady {
					w.rec.told(p.Position.Token, "hello")
				}
			}
		}
		return wsFrameGoOn
	case protocol.FrameEntered:
		if !*entered {
			*entered = true
			w.rec.mu.Lock()
			w.rec.Entries++
			w.rec.mu.Unlock()
			w.s.entries.Add(1)
		}
		pos = f.Position
	case protocol.FramePosition, protocol.FrameAdmissionPosition:
		if f.Type == protocol.FrameAdmissionPosition && f.Queue != gateQueue {
			return wsFrameGoOn
		}
		pos = f.Position
	case protocol.FrameAdmissionReady:
		if f.Queue != gateQueue {
			return wsFrameGoOn
		}
		w.rec.told(f.Token, f.Type)
		w.s.pushesReady.Add(1)
		w.handOff(ctx, f.Token)
		return wsFrameDone
	case protocol.FrameLeft:
		return wsFrameDone
	case frameError:
		if f.Error == nil {
			return wsFrameGoOn
		}
		switch f.Error.Code {
		case "UNAVAILABLE", "INTERNAL", "RATE_LIMITED":
			if !*entered {
				return wsFrameRetry
			}
			return wsFrameGoOn // the next position asks again
		}
		if !*entered {
			return wsFrameDone
		}
		return wsFrameGoOn
	default:
		return wsFrameGoOn
	}
	if pos == nil {
		return wsFrameGoOn
	}
	reply := f.Type == protocol.FrameEntered || f.Type == protocol.FramePosition // read from the record now
	switch pos.Status {
	case protocol.PositionReady:
		w.rec.told(pos.Token, f.Type)
		w.handOff(ctx, pos.Token)
		return wsFrameDone
	case protocol.PositionWaiting:
		if reply {
			w.lastWaiting = time.Now()
		}
	case protocol.PositionNotEntered:
		if reply && !w.leaveSent && !w.lastWaiting.IsZero() {
			w.rec.ended(endSeen{Via: "ws", At: time.Now(), Seen: w.lastWaiting, SocketFrom: w.sockFrom})
		}
		if *entered {
			return wsFrameDone
		}
	}
	return wsFrameGoOn
}

// --- the downstream ---

// hand gives token to the downstream unless it has it already, and returns
// a channel closed when the downstream is done with it.
func (s *admSim) hand(ctx context.Context, token, user string) <-chan struct{} {
	s.mu.Lock()
	done, ok := s.handed[token]
	if !ok {
		done = make(chan struct{})
		s.handed[token] = done
		s.inFlight.Add(1)
	}
	s.mu.Unlock()
	if !ok {
		select {
		case s.jobs <- tokenJob{token: token, user: user, done: done}:
		case <-ctx.Done():
			s.inFlight.Add(-1)
			close(done)
		}
	}
	return done
}

// downstream serves tokens until ctx ends.
func (s *admSim) downstream(ctx context.Context, rng *rand.Rand) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-s.jobs:
			s.serve(ctx, j, rng.Float64())
			close(j.done)
			s.inFlight.Add(-1)
		}
	}
}

func (s *admSim) serve(ctx context.Context, j tokenJob, plan float64) {
	r := &dsRec{Token: j.token, User: j.user, Users: map[string]bool{}, Codes: map[string]int{}}
	s.mu.Lock()
	s.ds[j.token] = r
	s.mu.Unlock()
	if plan < dSkip {
		return
	}
	if !s.tokenCall(ctx, r, "claim") {
		return
	}
	if plan < dRelease {
		if !s.tokenCall(ctx, r, "release") || !s.tokenCall(ctx, r, "claim") {
			return
		}
	}
	if !s.tokenCall(ctx, r, "consume") {
		return
	}
	if plan < dConsumeTwice {
		s.tokenCall(ctx, r, "consume") // must be refused: NOT_CLAIMED
		s.tokenCall(ctx, r, "claim")   // must be refused: ALREADY_CLAIMED
	}
}

// tokenCall sends one call of the downstream, retried on the other gateway
// after a transport failure or a 5xx (whose effect is unknown: a retried
// consume may then be refused, its first try having gone through). It
// reports whether the answer was 200.
func (s *admSim) tokenCall(ctx context.Context, r *dsRec, call string) bool {
	body, _ := json.Marshal(protocol.TokenRequest{Token: r.Token})
	backoff := 100 * time.Millisecond
	gw := rand.IntN(len(s.gateways))
	for try := 0; try < 20; try++ {
		s.mu.Lock()
		r.Sent++
		s.mu.Unlock()
		status, b, err := s.do(ctx, http.MethodPost, "http://"+s.gateways[gw]+"/v1/admission/"+gateQueue+"/tokens/"+call, s.admin, bytes.NewReader(body))
		if ctx.Err() != nil {
			return false
		}
		if err == nil && status == http.StatusOK {
			var tb struct {
				UserID string `json:"userId"`
			}
			_ = json.Unmarshal(b, &tb)
			s.mu.Lock()
			switch call {
			case "claim":
				r.Claims++
			case "release":
				r.Releases++
			case "consume":
				r.Consumes++
			}
			r.Users[tb.UserID] = true
			s.mu.Unlock()
			return true
		}
		if err == nil && status/100 == 4 {
			var eb struct {
				Error protocol.ClientError `json:"error"`
			}
			_ = json.Unmarshal(b, &eb)
			s.mu.Lock()
			r.Codes[fmt.Sprintf("%s %d %s", call, status, eb.Error.Code)]++
			s.mu.Unlock()
			return false
		}
		gw = (gw + 1) % len(s.gateways)
		if !sleepCtx(ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return false
}

func (s *admSim) do(ctx context.Context, method, url, bearer string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// snapshot copies the downstream's records.
func (s *admSim) snapshot() map[string]*dsRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*dsRec, len(s.ds))
	for k, v := range s.ds {
		out[k] = v
	}
	return out
}
