package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/matchgate/matchgate/client"
	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/internal/faultproxy"
	"github.com/matchgate/matchgate/protocol"
)

// player is a guest connected through a Client.
type player struct {
	*client.Client
	g client.GuestToken
}

func dialGuest(t *testing.T, base, socket string, opts *client.Options) player {
	t.Helper()
	ctx := testContext(t)
	g, err := client.Guest(ctx, base, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if socket == "" {
		socket = base
	}
	c, err := client.Dial(ctx, socket, client.StaticToken(g.Token), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if h := c.Hello(); h.UserID != g.UserID {
		t.Fatalf("hello for %q, want %q", h.UserID, g.UserID)
	}
	return player{c, g}
}

// next reads events until one satisfies ok, failing after within.
func next[E client.Event](t *testing.T, c *client.Client, within time.Duration, ok func(E) bool) E {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	var seen []string
	for {
		select {
		case e, open := <-c.Events():
			if !open {
				t.Fatalf("events closed; saw %v", seen)
			}
			if x, is := e.(E); is && (ok == nil || ok(x)) {
				return x
			}
			seen = append(seen, eventName(e))
		case <-timer.C:
			var zero E
			t.Fatalf("no %T within %s; saw %v", zero, within, seen)
		}
	}
}

func eventName(e client.Event) string {
	switch e := e.(type) {
	case client.StateEvent:
		return "state:" + e.State.String()
	case client.TicketEvent:
		return "ticket(" + e.Frame + "):" + e.Ticket.Status
	case client.MatchEvent:
		return "match(" + e.Frame + "):" + e.Match.State
	case client.HelloEvent:
		return "hello"
	case client.ErrorEvent:
		return "error:" + e.Err.Error()
	}
	return fmt.Sprintf("%T", e)
}

func foundFor(ticket string) func(client.MatchEvent) bool {
	return func(e client.MatchEvent) bool {
		return slices.ContainsFunc(e.Match.Players, func(p protocol.ClientSeat) bool { return p.TicketID == ticket })
	}
}

// Two players join a pairs queue: both are pushed the same match, and the
// state each holds marks its ticket MATCHED.
func TestPairIsMatched(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	a, b := dialGuest(t, base, "", nil), dialGuest(t, base, "", nil)
	ta, err := a.Join(ctx, "pairs", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ta.Status != client.StatusWaiting || ta.Queue != "pairs" || ta.UserID != a.g.UserID || ta.Version == 0 {
		t.Fatalf("joined: %+v", ta)
	}
	tb, err := b.Join(ctx, "pairs", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ma := next(t, a.Client, 10*time.Second, foundFor(ta.ID))
	mb := next(t, b.Client, 10*time.Second, foundFor(tb.ID))
	if ma.Frame != protocol.FrameMatchFound || ma.Match.ID != mb.Match.ID || len(ma.Match.Players) != 2 || ma.Match.Version == 0 {
		t.Fatalf("match.found: %+v / %+v", ma, mb)
	}
	for _, p := range []struct {
		player
		ticket string
	}{{a, ta.ID}, {b, tb.ID}} {
		tk, ok := p.Ticket(p.ticket)
		if !ok || tk.Status != client.StatusMatched || tk.MatchID != ma.Match.ID {
			t.Fatalf("%s holds ticket %+v", p.g.UserID, tk)
		}
		if m, ok := p.MatchForTicket(p.ticket); !ok || m.ID != ma.Match.ID {
			t.Fatalf("%s: MatchForTicket = %+v, %v", p.g.UserID, m, ok)
		}
	}
	if ma.Match.State != client.MatchReady {
		t.Fatalf("a pairs match without an accept window is %s, want READY", ma.Match.State)
	}
	if _, err := a.Join(ctx, "nosuchqueue", client.JoinOptions{}); !isCode(err, protocol.CodeUnknownQueue) {
		t.Fatalf("join of an unknown queue: %v", err)
	}
}

// In a queue with an accept window both players accept: the last accept's
// reply and the pushed match.ready confirm the match, READY with its game
// server, and the state held is READY whatever order they came in.
func TestAcceptConfirms(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	a, b := dialGuest(t, base, "", nil), dialGuest(t, base, "", nil)
	ta, err := a.Join(ctx, "arena", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(ctx, "arena", client.JoinOptions{}); err != nil {
		t.Fatal(err)
	}
	found := next(t, a.Client, 10*time.Second, foundFor(ta.ID)).Match
	if found.State != client.MatchPendingAccept || found.AcceptBy == nil || found.Server != nil {
		t.Fatalf("match.found: %+v", found)
	}
	next(t, b.Client, 10*time.Second, func(e client.MatchEvent) bool { return e.Match.ID == found.ID })
	first, err := a.Accept(ctx, found.ID)
	if err != nil {
		t.Fatal(err)
	}
	if first.State != client.MatchPendingAccept || !slices.Equal(first.Accepted, []string{a.g.UserID}) || first.Version <= found.Version {
		t.Fatalf("first accept: %+v", first)
	}
	last, err := b.Accept(ctx, found.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last.State != client.MatchReady || last.Server == nil || last.Server.Address == "" {
		t.Fatalf("last accept: %+v", last)
	}
	ready := next(t, a.Client, 10*time.Second, func(e client.MatchEvent) bool { return e.Match.State == client.MatchReady })
	if ready.Frame != protocol.FrameMatchReady || ready.Match.Server == nil || *ready.Match.Server != *last.Server {
		t.Fatalf("a's match.ready: %+v", ready)
	}
	for _, p := range []player{a, b} {
		if m, ok := p.Match(found.ID); !ok || m.State != client.MatchReady || m.Version != last.Version {
			t.Fatalf("%s holds %+v, want READY v%d", p.g.UserID, m, last.Version)
		}
	}
}

// A cancelled ticket is CANCELLED in the reply and in the state held; a
// second cancel is refused with the server's code.
func TestCancel(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	a := dialGuest(t, base, "", nil)
	tk, err := a.Join(ctx, "pairs", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Join(ctx, "pairs", client.JoinOptions{}); !isCode(err, protocol.CodeAlreadyQueued) {
		t.Fatalf("second join: %v", err)
	} else if e := (*client.Error)(nil); errors.As(err, &e) && e.TicketID != tk.ID {
		t.Fatalf("ALREADY_QUEUED names %q, want %q", e.TicketID, tk.ID)
	}
	got, err := a.Cancel(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != tk.ID || got.Status != client.StatusCancelled || got.Version <= tk.Version {
		t.Fatalf("cancelled: %+v", got)
	}
	if held, _ := a.Ticket(tk.ID); held.Status != client.StatusCancelled {
		t.Fatalf("held: %+v", held)
	}
	if len(a.Waiting()) != 0 {
		t.Fatalf("still waiting: %+v", a.Waiting())
	}
	if _, err := a.Cancel(ctx, tk.ID); !isCode(err, protocol.CodeAlreadyCancelled) {
		t.Fatalf("second cancel: %v", err)
	}
	if err := a.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

func receive(t *testing.T, c *client.Client) client.Event {
	t.Helper()
	select {
	case e := <-c.Events():
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return nil
	}
}

func isCode(err error, code protocol.Code) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == code
}

// A player whose connection is cut as its match is pushed (the push
// lost with it) reconnects, after the backoff the injected random chose,
// reads hello and catches up on the match from it.
func TestReconnectCatchesUp(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	proxy := faultproxy.New(t, strings.TrimPrefix(base, "http://"))
	opts := &client.Options{BackoffBase: 40 * time.Millisecond, BackoffCap: time.Second, Random: func() float64 { return 0.5 }}
	a := dialGuest(t, base, "ws://"+proxy.Addr()+"/v1/ws", opts)
	ta, err := a.Join(ctx, "pairs", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The chunk holding a's match.found is thrown away and a's connection
	// cut; b is connected directly.
	proxy.DropReply([]byte(`"type":"match.found"`))
	b := dialGuest(t, base, "", nil)
	tb, err := b.Join(ctx, "pairs", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := next(t, b.Client, 10*time.Second, foundFor(tb.ID)).Match
	if !slices.ContainsFunc(m.Players, func(p protocol.ClientSeat) bool { return p.TicketID == ta.ID }) {
		t.Fatalf("b matched without a: %+v", m)
	}

	lost := next(t, a.Client, 10*time.Second, func(e client.StateEvent) bool { return e.State == client.Reconnecting })
	if want := client.Backoff(0, opts.BackoffBase, opts.BackoffCap, opts.Random); lost.Delay != want || lost.Attempt != 1 || lost.Err == nil {
		t.Fatalf("reconnecting: %+v, want delay %s attempt 1", lost, want)
	}
	if proxy.Dropped() != 1 {
		t.Fatalf("the proxy cut %d connections, want 1", proxy.Dropped())
	}
	caught := next(t, a.Client, 10*time.Second, func(e client.MatchEvent) bool { return e.Match.ID == m.ID })
	if caught.Frame != protocol.FrameHello {
		t.Fatalf("caught up from %q, want hello", caught.Frame)
	}
	h := next(t, a.Client, 5*time.Second, func(e client.HelloEvent) bool { return e.Reconnect })
	if h.Hello.UserID != a.g.UserID || !slices.ContainsFunc(h.Hello.Matches, func(x client.Match) bool { return x.ID == m.ID }) {
		t.Fatalf("hello after reconnect: %+v", h.Hello)
	}
	if tk, _ := a.Ticket(ta.ID); tk.Status != client.StatusMatched || tk.MatchID != m.ID {
		t.Fatalf("a's ticket after the catch-up: %+v", tk)
	}
	if !a.Connected() {
		t.Fatal("not connected after hello")
	}
	if err := a.Ping(ctx); err != nil {
		t.Fatalf("ping on the new socket: %v", err)
	}
}

// A join whose reply is lost (the server queued the ticket, then the
// connection was cut) fails with ErrDisconnected; the hello after the
// reconnect brings the ticket the server made.
func TestLostReplyRecoveredFromHello(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	proxy := faultproxy.New(t, strings.TrimPrefix(base, "http://"))
	a := dialGuest(t, base, "ws://"+proxy.Addr()+"/v1/ws", &client.Options{BackoffBase: 20 * time.Millisecond})
	proxy.DropReply([]byte(`"joined"`))
	if _, err := a.Join(ctx, "pairs", client.JoinOptions{}); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("join with its reply lost: %v", err)
	}
	e := next(t, a.Client, 10*time.Second, func(e client.TicketEvent) bool { return e.Frame == protocol.FrameHello })
	if e.Ticket.Status != client.StatusWaiting || e.Ticket.Queue != "pairs" {
		t.Fatalf("hello's ticket: %+v", e.Ticket)
	}
	if w := a.Waiting(); len(w) != 1 || w[0].ID != e.Ticket.ID {
		t.Fatalf("waiting: %+v", w)
	}
	// Commands work on the new socket.
	if _, err := a.Cancel(ctx, e.Ticket.ID); err != nil {
		t.Fatal(err)
	}
}

// A token the server refuses fails Dial; nothing is left running.
func TestDialRefused(t *testing.T) {
	base := startServer(t)
	_, err := client.Dial(testContext(t), base, client.StaticToken("not-a-token"), nil)
	var te *client.TerminalError
	if !errors.As(err, &te) || te.Status != http.StatusUnauthorized {
		t.Fatalf("dial with a bad token: %v", err)
	}
}

// A consumer that reads no events slows nothing down: commands complete,
// the events that did not fit are counted in a GapEvent, and the state
// held is complete.
func TestSlowConsumer(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	a := dialGuest(t, base, "", &client.Options{EventBuffer: 1})
	var tickets []string
	for range 3 {
		tk, err := a.Join(ctx, "pairs", client.JoinOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Cancel(ctx, tk.ID); err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk.ID)
	}
	if e := receive(t, a.Client); e != (client.StateEvent{State: client.Connecting}) {
		t.Fatalf("first event %#v", e)
	}
	// What was dropped is told with the next event there is room for.
	tk, err := a.Join(ctx, "pairs", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tickets = append(tickets, tk.ID)
	g, ok := receive(t, a.Client).(client.GapEvent)
	if !ok || g.Dropped < 8 {
		t.Fatalf("second event %#v, want a gap of at least 8", g)
	}
	tickets = tickets[:len(tickets)-1]
	for _, id := range tickets {
		if tk, _ := a.Ticket(id); tk.Status != client.StatusCancelled {
			t.Fatalf("held %+v", tk)
		}
	}
}

// Close ends the socket and every goroutine: Events and Done are closed,
// commands fail with ErrClosed.
func TestClose(t *testing.T) {
	base := startServer(t)
	tok, err := gateway.MintToken([]byte(testSecret), "closer", nil, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, err := client.Dial(testContext(t), base, client.StaticToken(tok), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	<-a.Done()
	var last client.Event
	for e := range a.Events() {
		last = e
	}
	if last != (client.StateEvent{State: client.Closed}) {
		t.Fatalf("last event %#v", last)
	}
	if err := a.Ping(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("ping after close: %v", err)
	}
	if a.Err() != nil {
		t.Fatalf("Err after Close: %v", a.Err())
	}
	_ = a.Close()
}

// With DisableReconnect a lost socket stops the client, and Err says why.
func TestDisableReconnect(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	proxy := faultproxy.New(t, strings.TrimPrefix(base, "http://"))
	a := dialGuest(t, base, "ws://"+proxy.Addr()+"/v1/ws", &client.Options{DisableReconnect: true})
	proxy.DropReply([]byte(`"pong"`))
	if err := a.Ping(ctx); !errors.Is(err, client.ErrDisconnected) && !errors.Is(err, client.ErrClosed) {
		t.Fatalf("ping with its reply lost: %v", err)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client kept going")
	}
	if a.Err() == nil {
		t.Fatal("Err is nil after the loss")
	}
	if err := a.Ping(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("ping after the stop: %v", err)
	}
}
