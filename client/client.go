package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/protocol"
)

// TokenFunc gives the token of each connection attempt. It is called
// before every attempt, so a source that mints or refreshes tokens hands
// a reconnect a fresh one (a token that expired closes the socket with
// 4401). It must return promptly, or when ctx ends.
type TokenFunc func(ctx context.Context) (string, error)

// StaticToken is a TokenFunc that always gives token: a guest's, say,
// which is the guest's identity (another guest sign-in is another user).
func StaticToken(token string) TokenFunc {
	return func(context.Context) (string, error) { return token, nil }
}

// Options tune a Client; the zero value is the defaults.
type Options struct {
	// Logger receives the client's debug and warning lines (default: none).
	Logger *slog.Logger
	// EventBuffer is the capacity of the Events channel (default 256).
	EventBuffer int
	// RequestTimeout bounds each command, its wait for a socket included,
	// when its context has no earlier deadline (default 10s).
	RequestTimeout time.Duration
	// BackoffBase and BackoffCap bound the reconnect waits (Backoff;
	// defaults 500ms and 15s, those of web/matchgate.js).
	BackoffBase, BackoffCap time.Duration
	// DialTimeout bounds one connection attempt up to its hello (default 10s).
	DialTimeout time.Duration
	// PingInterval is how often an open socket is pinged; a ping not
	// answered within the interval drops the socket, which is then
	// reconnected. This is what notices a network gone silent. Default 15s;
	// negative disables.
	PingInterval time.Duration
	// MaxFrameBytes is the largest frame read (default 1 MiB: a hello lists
	// the user's recent history).
	MaxFrameBytes int64
	// Random gives numbers in [0, 1) for the backoff's jitter, and Clock
	// the time the client waits on; tests inject both.
	Random func() float64
	Clock  Clock
	// HTTPClient makes the upgrade requests (default http.DefaultClient).
	HTTPClient *http.Client
	// HeartbeatInterval is how often, while the socket is down, each
	// WAITING ticket is kept alive over REST (PUT
	// /v1/tickets/{id}/heartbeat), as web/matchgate.js does: the server
	// cancels the ticket of a player with no socket and no heartbeat for
	// the queue's heartbeat timeout (30s by default). Default 10s;
	// negative disables. An open socket keeps its tickets alive itself.
	HeartbeatInterval time.Duration
	// BaseURL is the REST base the heartbeats go to (default: the
	// socket's host, over http or https); RESTClient sends them (default
	// http.DefaultClient).
	BaseURL    string
	RESTClient *http.Client
	// DisableReconnect stops the client when its socket is lost, instead
	// of reconnecting: Err is then the loss. For callers that decide
	// themselves when to connect again (a load generator's drops).
	DisableReconnect bool
	// OnFrame, when set, sees every frame the socket reads, as it was
	// read: its bytes and the time of the read, before the client decodes
	// it, and whether or not the client then keeps it (a stale version is
	// dropped from the state and the events, never from OnFrame). Each
	// socket's hello is its first call. For tools that check the protocol
	// on the wire (cmd/loadgen, cmd/chaos).
	//
	// It is called on the goroutine that reads the socket, one frame at a
	// time in order, so it must return promptly and never block: while it
	// runs the socket is not read, and the server closes a socket that
	// falls behind as a slow consumer. data is the frame's own buffer; it
	// may be kept.
	OnFrame func(data []byte, at time.Time)
	// OnSession, when set, sees the boundaries of each socket, on the same
	// goroutine as OnFrame and in order with its frames (the same rules
	// apply): Session{Up: true} once a socket is upgraded (its hello is the
	// next frame), Session{Up: false} once it has ended, with why.
	OnSession func(Session)
	// OnSend, when set, sees every command frame just before it is
	// written: its bytes and the time. With OnFrame, a tool learns which
	// reply (its "re") answers which command (its "id"): the command is
	// seen before its reply. It is called on the goroutine of the command
	// (several may run at once) and must not block; data may be kept.
	OnSend func(data []byte, at time.Time)
}

// Session is a boundary of one socket, for Options.OnSession.
type Session struct {
	// Up: the socket was upgraded. Otherwise it has ended: no frame of it
	// follows.
	Up bool
	At time.Time
	// Err is why the socket ended: nil after Close, ErrDropped after
	// Drop, otherwise the read's error (websocket.CloseStatus gives the
	// close code the server sent, when it sent one; a ban or an expired
	// token is a *TerminalError).
	Err error
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = 256
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 500 * time.Millisecond
	}
	if o.BackoffCap <= 0 {
		o.BackoffCap = 15 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.PingInterval == 0 {
		o.PingInterval = 15 * time.Second
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = 10 * time.Second
	}
	if o.RESTClient == nil {
		o.RESTClient = http.DefaultClient
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = 1 << 20
	}
	if o.Random == nil {
		o.Random = defaultRandom
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return o
}

// Client holds one WebSocket to a matchgate gateway, reconnecting as
// needed until Close, and keeps the user's state from what the server
// sends. Its methods are safe for concurrent use.
type Client struct {
	url   string
	token TokenFunc
	opts  Options
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the heartbeats, and the resubscriptions the run loop starts
	done   chan struct{}  // closed when the run loop has ended
	events chan Event

	// gap counts events dropped since the last delivered one; only the run
	// loop sends events, so only it touches gap.
	gap int

	mu      sync.Mutex
	st      *store
	hello   Hello
	hellos  int
	link    *link         // the open socket, nil while there is none
	linkUp  chan struct{} // closed once link is set; replaced when it is lost
	pending map[string]*pending
	seq     uint64
	subs    map[rankKey]*rankSub
	stopErr error  // why the client stopped, once it has
	lastTok string // the token of the last socket, for the heartbeats
}

// link is one open socket. lost is closed when it ends.
type link struct {
	conn    *websocket.Conn
	lost    chan struct{}
	dropped atomic.Bool // Drop cut it
}

// pending is a command waiting for its reply (the frame whose re is its
// id), with what the reply needs from the command: the queue of an
// admission command (left carries none).
type pending struct {
	typ   string
	queue string
	link  *link
	reply chan frame
}

type rankKey struct{ ranking, window string }

type rankSub struct {
	limit *int
	busy  bool // a subscribe of it is on the way
}

// Dial connects to a matchgate gateway and returns once the first hello
// has been read (Client.Hello holds it), or with the first attempt's
// error: a bad URL, a refused token or a server that is down fail here.
// From then on the client reconnects by itself, with full-jitter
// exponential backoff, until Close: ctx bounds the first attempt only.
//
// rawURL is the socket's URL (ws://host/v1/ws, wss://…), or an http(s)
// base URL to which /v1/ws is added. opts may be nil.
func Dial(ctx context.Context, rawURL string, token TokenFunc, opts *Options) (*Client, error) {
	if token == nil {
		return nil, errors.New("matchgate client: no token source")
	}
	u, err := socketURL(rawURL)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	if o.BaseURL == "" {
		o.BaseURL = restBase(u)
	}
	c := &Client{
		url: u, token: token, opts: o, log: o.Logger,
		done:    make(chan struct{}),
		events:  make(chan Event, o.EventBuffer),
		st:      newStore(),
		linkUp:  make(chan struct{}),
		pending: map[string]*pending{},
		subs:    map[rankKey]*rankSub{},
	}
	// ctx bounds the first attempt only, as it does websocket.Dial's
	// handshake: the client's life ends with Close.
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))

	c.emit(StateEvent{State: Connecting})
	l, lastTok, err := c.open(ctx)
	if err != nil {
		c.cancel()
		close(c.events)
		close(c.done)
		return nil, err
	}
	if o.HeartbeatInterval > 0 && !o.DisableReconnect {
		c.wg.Go(c.heartbeats)
	}
	go func() {
		c.run(l, lastTok)
		c.cancel()
		c.wg.Wait()
		close(c.events)
		close(c.done)
	}()
	return c, nil
}

// Close stops the client: the socket is closed (1000), reconnecting ends,
// commands waiting for a reply fail with ErrClosed or ErrDisconnected,
// and Events is closed once every goroutine of the client has returned,
// which Close waits for (on a network gone silent, the close handshake
// gives up after coder/websocket's own timeouts, seconds). Calling it
// again does nothing.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

// Done is closed once the client has stopped: after Close, or when it
// stopped reconnecting for good (Err says why).
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the client stopped: nil while it runs and after Close, a
// *TerminalError when the server refused it for good, the loss of the
// socket with Options.DisableReconnect.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopErr
}

// Events delivers what the client hears and does (the Event types), in the
// order it happened, and is closed when the client stops.
//
// The client never blocks on it: the socket is read by one goroutine,
// which must keep reading or the server drops the socket as a slow
// consumer. When the channel is full (Options.EventBuffer), an event is
// thrown away and counted, and the next event delivered is a GapEvent with
// the count. Nothing else is lost: the state (Ticket, Match, Tickets,
// Matches, Admission, Provider, Assignment) is updated whatever the
// consumer does, and commands get their replies. A consumer that sees a
// GapEvent reads the state it needs from there. A consumer that does not
// want events at all need not read them.
func (c *Client) Events() <-chan Event { return c.events }

// emit delivers e without blocking (see Events). It is called only from
// the goroutine that runs the socket, and from Dial before that starts.
func (c *Client) emit(e Event) {
	if c.gap > 0 {
		select {
		case c.events <- GapEvent{Dropped: c.gap}:
			c.gap = 0
		default:
			c.gap++
			return
		}
	}
	select {
	case c.events <- e:
	default:
		c.gap++
	}
}

// run keeps the client connected: it serves l, then reconnects after each
// loss until the client is closed or refused for good.
func (c *Client) run(l *link, lastTok string) {
	// refused is the token the server last refused (HTTP 401, or 4401 when
	// it expired on an open socket): the token source is asked again, and
	// the client stops when it gives the same one.
	var refused string
	attempt := 0
	for {
		var err error
		if l != nil {
			attempt = 0
			err = c.serve(l)
			l = nil
			if isUnauthorized(err) {
				refused = lastTok
			}
		} else {
			var tok string
			l, tok, err = c.open(c.ctx)
			if err == nil {
				lastTok, refused = tok, ""
				continue
			}
			if isUnauthorized(err) {
				if tok == refused {
					c.stop(err)
					return
				}
				refused = tok
			}
		}
		if c.ctx.Err() != nil {
			c.stop(nil)
			return
		}
		if terminal(err) || c.opts.DisableReconnect {
			c.stop(err)
			return
		}
		d := Backoff(attempt, c.opts.BackoffBase, c.opts.BackoffCap, c.opts.Random)
		attempt++
		c.log.Debug("matchgate client: reconnecting", slog.Int("attempt", attempt), slog.Duration("delay", d), slog.Any("error", err))
		// The wait starts before it is told: whoever sees the event finds
		// the client waiting.
		wait := c.opts.Clock.After(d)
		c.emit(StateEvent{State: Reconnecting, Attempt: attempt, Delay: d, Err: err})
		select {
		case <-wait:
		case <-c.ctx.Done():
			c.stop(nil)
			return
		}
		c.emit(StateEvent{State: Connecting, Attempt: attempt})
	}
}

// stop records why the client stopped and fails what still waits.
func (c *Client) stop(err error) {
	c.mu.Lock()
	c.stopErr = err
	c.mu.Unlock()
	c.cancel()
	c.emit(StateEvent{State: Closed, Err: err})
}

// open makes one connection attempt: a token, the upgrade, and the hello,
// which it merges before the socket is offered to commands. It returns the
// token it used.
func (c *Client) open(ctx context.Context) (*link, string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	tok, err := c.token(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("matchgate client: token: %w", err)
	}
	u := c.url
	if strings.Contains(u, "?") {
		u += "&token=" + url.QueryEscape(tok)
	} else {
		u += "?token=" + url.QueryEscape(tok)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.opts.HTTPClient})
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return nil, tok, &TerminalError{Status: resp.StatusCode, Reason: resp.Status}
		}
		return nil, tok, fmt.Errorf("matchgate client: dial: %w", err)
	}
	conn.SetReadLimit(c.opts.MaxFrameBytes)
	c.session(Session{Up: true, At: c.opts.Clock.Now()})
	_, b, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		err = fmt.Errorf("matchgate client: read hello: %w", closeErr(err))
		c.session(Session{At: c.opts.Clock.Now(), Err: err})
		return nil, tok, err
	}
	if c.opts.OnFrame != nil {
		c.opts.OnFrame(b, c.opts.Clock.Now())
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil || f.Type != protocol.FrameHello {
		conn.CloseNow()
		err := fmt.Errorf("matchgate client: first frame is not hello: %.80q", b)
		c.session(Session{At: c.opts.Clock.Now(), Err: err})
		return nil, tok, err
	}
	l := &link{conn: conn, lost: make(chan struct{})}
	hello := c.onHello(f)
	c.mu.Lock()
	c.link, c.lastTok = l, tok
	close(c.linkUp)
	c.mu.Unlock()
	// The HelloEvent once the socket is offered: whoever sees it finds
	// the client Connected.
	c.emit(hello)
	c.emit(StateEvent{State: Open})
	c.resubscribe()
	return l, tok, nil
}

// serve reads l until it ends, pinging it meanwhile, and returns why it
// ended. Closing the client closes the socket with 1000, which ends the
// read; a read's own context is not the client's, since cancelling a read
// drops the socket without its close handshake.
func (c *Client) serve(l *link) error {
	pctx, cancel := context.WithCancel(c.ctx)
	var pinger sync.WaitGroup
	closed := make(chan struct{})
	stopClose := context.AfterFunc(c.ctx, func() {
		defer close(closed)
		_ = l.conn.Close(websocket.StatusNormalClosure, "client closed")
	})
	defer func() {
		if !stopClose() {
			<-closed // the close handshake is the client's to finish
		}
		cancel()
		pinger.Wait()
		c.lose(l)
	}()
	if c.opts.PingInterval > 0 {
		pinger.Go(func() { c.ping(pctx, l) })
	}
	for {
		_, b, err := l.conn.Read(context.Background())
		if err != nil {
			l.conn.CloseNow()
			err = closeErr(err)
			cause := err
			switch {
			case c.ctx.Err() != nil:
				cause = nil
			case l.dropped.Load():
				err, cause = ErrDropped, ErrDropped
			}
			c.session(Session{At: c.opts.Clock.Now(), Err: cause})
			return err
		}
		if c.opts.OnFrame != nil {
			c.opts.OnFrame(b, c.opts.Clock.Now())
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			c.emit(ErrorEvent{Err: fmt.Errorf("matchgate client: undecodable frame: %w", err)})
			continue
		}
		c.handle(f)
	}
}

// session tells Options.OnSession of a socket's boundary.
func (c *Client) session(s Session) {
	if c.opts.OnSession != nil {
		c.opts.OnSession(s)
	}
}

// Drop cuts the current socket at once, without a close handshake, as a
// network that fails would: the server sees the connection reset. The
// client then goes on as after any loss: commands waiting for a reply on
// the socket fail with ErrDisconnected, and it reconnects (with backoff),
// or, with Options.DisableReconnect, stops with Err ErrDropped. Drop does
// nothing while there is no socket. For tools that test what a dropped
// client meets.
func (c *Client) Drop() {
	c.mu.Lock()
	l := c.link
	c.mu.Unlock()
	if l != nil {
		l.dropped.Store(true)
		l.conn.CloseNow()
	}
}

// ping pings l every interval; one not answered in time drops it.
func (c *Client) ping(ctx context.Context, l *link) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Clock.After(c.opts.PingInterval):
		}
		pctx, cancel := context.WithTimeout(ctx, c.opts.PingInterval)
		err := l.conn.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				c.log.Debug("matchgate client: ping failed, dropping the socket", slog.Any("error", err))
				l.conn.CloseNow()
			}
			return
		}
	}
}

// lose retires l: commands sent on it and not answered fail, and new
// ones wait for the next socket.
func (c *Client) lose(l *link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link == l {
		c.link = nil
		c.linkUp = make(chan struct{})
	}
	for id, p := range c.pending {
		if p.link == l {
			delete(c.pending, id)
		}
	}
	close(l.lost)
}

// closeErr is err with the close code a peer sent, when it sent one.
func closeErr(err error) error {
	if code := websocket.CloseStatus(err); code == gatewayBanned || code == gatewayUnauthorized {
		var ce websocket.CloseError
		errors.As(err, &ce)
		return &TerminalError{Code: code, Reason: ce.Reason}
	}
	return err
}

// The gateway's close codes that reconnecting with the same token cannot
// get past (gateway/closecodes.go).
const (
	gatewayUnauthorized websocket.StatusCode = 4401
	gatewayBanned       websocket.StatusCode = 4403
)

// terminal: the user is banned; reconnecting is refused until that
// changes.
func terminal(err error) bool {
	var te *TerminalError
	return errors.As(err, &te) && (te.Code == gatewayBanned || te.Status == http.StatusForbidden)
}

// isUnauthorized: the token was refused or expired; a new one may help.
func isUnauthorized(err error) bool {
	var te *TerminalError
	return errors.As(err, &te) && (te.Code == gatewayUnauthorized || te.Status == http.StatusUnauthorized)
}

// heartbeats keeps the WAITING tickets alive over REST while the socket
// is down, until the client stops.
func (c *Client) heartbeats() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.opts.Clock.After(c.opts.HeartbeatInterval):
		}
		c.mu.Lock()
		up, tok, waiting := c.link != nil, c.lastTok, c.st.waiting()
		c.mu.Unlock()
		if up || tok == "" {
			continue
		}
		for _, t := range waiting {
			if err := c.heartbeat(t.ID, tok); err != nil {
				// The ticket may be over, or the server unreachable: the
				// hello of the next socket tells.
				c.log.Debug("matchgate client: heartbeat", slog.String("ticket", t.ID), slog.Any("error", err))
			}
		}
	}
}

func (c *Client) heartbeat(ticketID, tok string) error {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.RequestTimeout)
	defer cancel()
	u := strings.TrimSuffix(c.opts.BaseURL, "/") + "/v1/tickets/" + url.PathEscape(ticketID) + "/heartbeat"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.opts.RESTClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return restError(resp, b)
	}
	return nil
}

// restBase is the http(s) base of a socket URL.
func restBase(socket string) string {
	u, err := url.Parse(socket)
	if err != nil {
		return ""
	}
	if u.Scheme == "wss" {
		u.Scheme = "https"
	} else {
		u.Scheme = "http"
	}
	u.Path, u.RawQuery = "", ""
	return u.String()
}

// socketURL is the socket's URL for a ws(s) URL, or an http(s) base.
func socketURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("matchgate client: url %q: %w", raw, err)
	}
	switch u.Scheme {
	case "ws", "wss":
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("matchgate client: url %q: scheme must be ws, wss, http or https", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/ws"
	}
	q := u.Query()
	q.Del("token")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// request sends a command and waits for its reply: the frame, or the
// server's *Error, ErrDisconnected (the socket was lost after the command
// was sent), ErrClosed or the context's error. While the client is
// reconnecting, the command waits for the socket.
func (c *Client) request(ctx context.Context, typ, queue string, build func(id string) any) (frame, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	for {
		if c.ctx.Err() != nil {
			return frame{}, fmt.Errorf("%s: %w", typ, ErrClosed)
		}
		c.mu.Lock()
		l, up := c.link, c.linkUp
		c.mu.Unlock()
		if l == nil {
			select {
			case <-up:
				continue
			case <-c.ctx.Done():
				return frame{}, fmt.Errorf("%s: %w", typ, ErrClosed)
			case <-ctx.Done():
				return frame{}, fmt.Errorf("%s: waiting for a socket: %w", typ, ctx.Err())
			}
		}
		c.mu.Lock()
		c.seq++
		id := "c" + strconv.FormatUint(c.seq, 10)
		p := &pending{typ: typ, queue: queue, link: l, reply: make(chan frame, 1)}
		c.pending[id] = p
		c.mu.Unlock()
		unregister := func() {
			c.mu.Lock()
			delete(c.pending, id)
			c.mu.Unlock()
		}
		b, err := json.Marshal(build(id))
		if err != nil {
			unregister()
			return frame{}, fmt.Errorf("%s: encode: %w", typ, err)
		}
		if c.opts.OnSend != nil {
			c.opts.OnSend(b, c.opts.Clock.Now())
		}
		if err := l.conn.Write(ctx, websocket.MessageText, b); err != nil {
			unregister()
			if ctx.Err() != nil {
				return frame{}, fmt.Errorf("%s: send: %w", typ, ctx.Err())
			}
			return frame{}, fmt.Errorf("%s: send: %w", typ, ErrDisconnected)
		}
		select {
		case f := <-p.reply:
			return replyOf(f)
		case <-l.lost:
			select {
			case f := <-p.reply:
				return replyOf(f)
			default:
			}
			if c.ctx.Err() != nil {
				return frame{}, fmt.Errorf("%s: %w", typ, ErrClosed)
			}
			return frame{}, fmt.Errorf("%s: %w", typ, ErrDisconnected)
		case <-ctx.Done():
			unregister()
			return frame{}, fmt.Errorf("%s: no reply: %w", typ, ctx.Err())
		}
	}
}

func replyOf(f frame) (frame, error) {
	if f.Type == protocol.FrameError {
		return f, errorOf(f.Error)
	}
	return f, nil
}

// handle merges one frame into the state, emits what changed, and hands a
// reply to the command waiting for it (after the merge: a command's caller
// sees the state its reply brought).
func (c *Client) handle(f frame) {
	c.mu.Lock()
	var p *pending
	if f.Re != "" {
		p = c.pending[f.Re]
		delete(c.pending, f.Re)
	}
	c.mu.Unlock()
	var queue string
	if p != nil {
		queue = p.queue
	}
	now := c.opts.Clock.Now()
	switch f.Type {
	case protocol.FrameHello:
		c.emit(c.onHello(f))
	case protocol.FrameStatus:
		c.putHistory(f.Type, f.Tickets, f.Matches)
	case protocol.FrameEntered:
		c.putAdmission(f.Type, queue, f.Position, fromEnter, now)
	case protocol.FramePosition:
		c.putAdmission(f.Type, queue, f.Position, fromReply, now)
	case protocol.FrameLeft:
		c.putAdmission(f.Type, queue, &Position{Status: PositionNotEntered}, fromLeave, now)
	case protocol.FrameAdmissionPosition:
		c.putAdmission(f.Type, f.Queue, f.Position, fromPush, now)
	case protocol.FrameAdmissionReady:
		c.putAdmission(f.Type, f.Queue, &Position{Status: PositionReady, Token: f.Token, ExpiresAt: f.ExpiresAt}, fromPush, now)
	case protocol.FrameProvider:
		if f.Provider != nil {
			c.mu.Lock()
			as := c.st.putProvider(*f.Provider)
			c.mu.Unlock()
			c.emitAssignments(f.Type, as)
			c.emit(ProviderEvent{Frame: f.Type, Provider: *f.Provider})
		}
	case protocol.FrameSubscribed, protocol.FrameRankingUpdate:
		c.mu.Lock()
		_, subscribed := c.subs[rankKey{f.Ranking, f.Window}]
		c.mu.Unlock()
		// A push already under way for a board no longer subscribed is
		// dropped.
		if subscribed {
			c.emit(RankingEvent{Frame: f.Type, Ranking: rankingOf(f)})
		}
	case protocol.FrameError:
		if p == nil {
			c.emit(ErrorEvent{Err: errorOf(f.Error)})
		}
	default:
		if f.Ticket != nil {
			c.putTicket(f.Type, *f.Ticket)
		}
		if f.Match != nil {
			c.putMatch(f.Type, *f.Match, f.Reason)
		}
		if f.Assignment != nil {
			c.mu.Lock()
			ok := c.st.putAssignment(*f.Assignment)
			c.mu.Unlock()
			if ok {
				c.emit(AssignmentEvent{Frame: f.Type, Assignment: *f.Assignment})
			}
		}
	}
	if p != nil {
		p.reply <- f
	}
}

// onHello merges a hello: its tickets and matches by version, its
// admission places and provider states as the server's word on them. It
// emits what changed, and returns the HelloEvent for the caller to emit.
func (c *Client) onHello(f frame) HelloEvent {
	h := Hello{UserID: f.UserID, Node: f.Node, Tickets: f.Tickets, Matches: f.Matches, More: f.More, Next: f.Next,
		Admission: f.Admission, Providers: f.Providers}
	now := c.opts.Clock.Now()
	c.mu.Lock()
	c.hello = h
	reconnect := c.hellos > 0
	c.hellos++
	queues := c.st.helloAdmissions(f.Admission, now)
	places := make([]Position, len(queues))
	for i, q := range queues {
		places[i] = c.st.admissions[q]
	}
	var ps []Provider
	var as []Assignment
	if f.Providers != nil {
		ps, as = c.st.helloProviders(f.Providers)
	}
	c.mu.Unlock()
	c.putHistory(f.Type, f.Tickets, f.Matches)
	for i, q := range queues {
		c.emit(AdmissionEvent{Frame: f.Type, Queue: q, Position: places[i], At: now})
	}
	c.emitAssignments(f.Type, as)
	for _, p := range ps {
		c.emit(ProviderEvent{Frame: f.Type, Provider: p})
	}
	return HelloEvent{Hello: h, Reconnect: reconnect}
}

func (c *Client) putHistory(typ string, ts []Ticket, ms []Match) {
	for _, t := range ts {
		c.putTicket(typ, t)
	}
	for _, m := range ms {
		c.putMatch(typ, m, "")
	}
}

func (c *Client) putTicket(typ string, t Ticket) {
	c.mu.Lock()
	ok := c.st.putTicket(t)
	t = c.st.tickets[t.ID]
	c.mu.Unlock()
	if ok {
		c.emit(TicketEvent{Frame: typ, Ticket: t})
	}
}

func (c *Client) putMatch(typ string, m Match, reason string) {
	c.mu.Lock()
	ok, seated := c.st.putMatch(m)
	c.mu.Unlock()
	if !ok {
		return
	}
	for _, t := range seated {
		c.emit(TicketEvent{Frame: typ, Ticket: t})
	}
	c.emit(MatchEvent{Frame: typ, Match: m, Reason: reason})
}

func (c *Client) putAdmission(typ, queue string, p *Position, src placeSource, now time.Time) {
	if p == nil {
		return
	}
	c.mu.Lock()
	ok := c.st.putAdmission(queue, *p, src, now)
	c.mu.Unlock()
	if ok {
		c.emit(AdmissionEvent{Frame: typ, Queue: queue, Position: *p, At: now})
	}
}

func (c *Client) emitAssignments(typ string, as []Assignment) {
	for _, a := range as {
		c.emit(AssignmentEvent{Frame: typ, Assignment: a})
	}
}

// resubscribe makes the ranking subscriptions again on a new socket. The
// replies come through the socket's reader, so the requests go from their
// own goroutines, owned by the client.
func (c *Client) resubscribe() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.subs {
		if s.busy {
			continue // its own request is on the way
		}
		s.busy = true
		limit := s.limit
		c.wg.Go(func() {
			_, err := c.subscribe(c.ctx, k, limit)
			c.mu.Lock()
			s.busy = false
			var e *Error
			if errors.As(err, &e) && (e.Code == protocol.CodeNotFound || e.Code == protocol.CodeBadRequest) && c.subs[k] == s {
				delete(c.subs, k) // the board is gone
			}
			c.mu.Unlock()
		})
	}
}

func rankingOf(f frame) Ranking {
	return Ranking{Ranking: f.Ranking, Window: f.Window, Period: f.Period, WeightsVersion: f.WeightsVersion, Items: f.Items}
}
