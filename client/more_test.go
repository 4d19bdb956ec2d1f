package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/client"
	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/internal/faultproxy"
	"github.com/matchgate/matchgate/protocol"
)

// An admission place: entered, admitted by the admitter (the
// admission.ready push), held READY with its token; left, NOT_ENTERED.
func TestAdmission(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	a := dialGuest(t, base, "", nil)
	p, err := a.Enter(ctx, "launch")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != client.PositionWaiting && p.Status != client.PositionReady {
		t.Fatalf("entered: %+v", p)
	}
	ready := next(t, a.Client, 10*time.Second, func(e client.AdmissionEvent) bool { return e.Position.Status == client.PositionReady })
	if ready.Queue != "launch" || ready.Position.Token == "" || !ready.Position.ExpiresAt.After(time.Now()) {
		t.Fatalf("admission: %+v", ready)
	}
	if held, ok := a.Admission("launch"); !ok || held.Token != ready.Position.Token {
		t.Fatalf("held %+v", held)
	}
	if got, err := a.Position(ctx, "launch"); err != nil || got.Status != client.PositionReady {
		t.Fatalf("position: %+v %v", got, err)
	}
	if err := a.Leave(ctx, "launch"); err != nil {
		t.Fatal(err)
	}
	if held, _ := a.Admission("launch"); held.Status != client.PositionNotEntered {
		t.Fatalf("after leave: %+v", held)
	}
	if _, err := a.Enter(ctx, "pairs"); !isCode(err, protocol.CodeUnknownQueue) && !isCode(err, protocol.CodeBadRequest) {
		t.Fatalf("enter of a matched queue: %v", err)
	}
}

// A provider goes online, is offered a requester, accepts, ends the
// assignment and goes offline; the requester's match goes READY.
func TestProvider(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	g, err := client.GuestWith(ctx, nil, base, client.GuestRequest{Role: "provider"})
	if err != nil {
		t.Fatal(err)
	}
	pro, err := client.Dial(ctx, base, client.StaticToken(g.Token), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pro.Close() })
	attrs := &client.Attributes{Languages: []string{"en"}, Specialties: []string{"tax"}, SessionTypes: []string{"chat"}, Rating: 4.5}
	v, err := pro.ProviderOnline(ctx, "advice", 1, attrs)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Online || v.Capacity != 1 || v.UserID != g.UserID {
		t.Fatalf("online: %+v", v)
	}

	req := dialGuest(t, base, "", nil)
	if _, err := req.ProviderOnline(ctx, "advice", 1, attrs); !isCode(err, protocol.CodeForbidden) {
		t.Fatalf("a player's provider.online: %v", err)
	}
	tk, err := req.Join(ctx, "advice", client.JoinOptions{Attributes: map[string]string{"language": "en", "specialty": "tax"}})
	if err != nil {
		t.Fatal(err)
	}
	offer := next(t, pro, 10*time.Second, func(e client.AssignmentEvent) bool { return e.Frame == protocol.FrameAssignmentOffered })
	if offer.Assignment.Status != "OFFERED" || offer.Assignment.Requester.TicketID != tk.ID {
		t.Fatalf("offered: %+v", offer.Assignment)
	}
	acc, err := pro.AcceptAssignment(ctx, offer.Assignment.ID)
	if err != nil || acc.Status != "ACCEPTED" {
		t.Fatalf("accept: %+v %v", acc, err)
	}
	if live := pro.LiveAssignments("advice"); len(live) != 1 || live[0].Status != "ACCEPTED" {
		t.Fatalf("live: %+v", live)
	}
	ready := next(t, req.Client, 10*time.Second, func(e client.MatchEvent) bool { return e.Match.State == client.MatchReady })
	if ready.Match.ID != offer.Assignment.ID || ready.Match.Provider == nil || ready.Match.Provider.UserID != g.UserID {
		t.Fatalf("requester's match: %+v", ready.Match)
	}
	end, err := pro.EndAssignment(ctx, acc.ID)
	if err != nil || end.Status != "ENDED" {
		t.Fatalf("end: %+v %v", end, err)
	}
	if held, _ := pro.Assignment(acc.ID); held.Status != "ENDED" {
		t.Fatalf("held %+v", held)
	}
	off, err := pro.ProviderOffline(ctx, "advice")
	if err != nil || off.Online {
		t.Fatalf("offline: %+v %v", off, err)
	}
	if held, _ := pro.Provider("advice"); held.Online {
		t.Fatalf("held %+v", held)
	}
}

// A token that expires on an open socket closes it with 4401; the client
// asks its token source for a new one and reconnects as the same user. A
// source that gives the refused token again stops the client for good.
func TestTokenRefresh(t *testing.T) {
	// The server closes a socket whose token is past its expiry by more
	// than its leeway (30s), at its next ping (every 300ms here); the
	// tokens are minted 29s in the past to live 2s more.
	base := startServer(t, "--ping-interval", "300ms")
	mint := func(sub string) (string, error) {
		return gateway.MintToken([]byte(testSecret), sub, nil, time.Second, time.Now().Add(-29*time.Second))
	}
	ctx := testContext(t)
	var calls atomic.Int32
	fresh := func() client.TokenFunc {
		return func(context.Context) (string, error) {
			calls.Add(1)
			return mint("refresh-user")
		}
	}
	opts := &client.Options{BackoffBase: 20 * time.Millisecond}
	c, err := client.Dial(ctx, base, fresh(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lost := next(t, c, 10*time.Second, func(e client.StateEvent) bool { return e.State == client.Reconnecting })
	var te *client.TerminalError
	if !errors.As(lost.Err, &te) || te.Code != 4401 {
		t.Fatalf("lost with %v, want close code 4401", lost.Err)
	}
	h := next(t, c, 10*time.Second, func(e client.HelloEvent) bool { return e.Reconnect })
	if h.Hello.UserID != "refresh-user" || calls.Load() < 2 {
		t.Fatalf("after refresh: hello %+v, %d tokens", h.Hello, calls.Load())
	}

	tok, err := mint("stale-user")
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.Dial(ctx, base, client.StaticToken(tok), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case <-s.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("a client whose only token expired kept going")
	}
	if !errors.As(s.Err(), &te) || te.Status != 401 {
		t.Fatalf("stopped with %v, want the upgrade refused with 401", s.Err())
	}
	if err := s.Ping(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("ping after the stop: %v", err)
	}
}

// A subscription is made again on the socket that replaces a lost one:
// the board's Top comes again, as a subscribed reply after the new hello.
func TestSubscriptionSurvivesReconnect(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	proxy := faultproxy.New(t, strings.TrimPrefix(base, "http://"))
	a := dialGuest(t, base, "ws://"+proxy.Addr()+"/v1/ws", &client.Options{BackoffBase: 20 * time.Millisecond})
	r, err := a.Subscribe(ctx, "products", "hour", 5)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ranking != "products" || r.Window != "hour" || r.Period == "" {
		t.Fatalf("subscribed: %+v", r)
	}
	next(t, a.Client, 5*time.Second, func(e client.RankingEvent) bool { return e.Frame == protocol.FrameSubscribed })
	if _, err := a.Subscribe(ctx, "nosuchboard", "hour", 0); !isCode(err, protocol.CodeNotFound) {
		t.Fatalf("subscribe to an unknown board: %v", err)
	}

	proxy.DropReply([]byte(`"pong"`))
	if err := a.Ping(ctx); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("ping with its reply lost: %v", err)
	}
	next(t, a.Client, 10*time.Second, func(e client.HelloEvent) bool { return e.Reconnect })
	again := next(t, a.Client, 10*time.Second, func(e client.RankingEvent) bool { return e.Frame == protocol.FrameSubscribed })
	if again.Ranking.Ranking != "products" || again.Ranking.Window != "hour" {
		t.Fatalf("after the reconnect: %+v", again.Ranking)
	}
	if err := a.Unsubscribe(ctx, "products", "hour"); err != nil {
		t.Fatal(err)
	}
}

// fakeClock records the waits asked of it; each ends when the test says.
type fakeClock struct {
	mu    sync.Mutex
	waits []time.Duration
	fire  chan time.Time
}

func (c *fakeClock) Now() time.Time { return time.Now() }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	return c.fire
}

func (c *fakeClock) asked() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

// The reconnect waits on the injected clock, for the backoff the injected
// random chose: nothing is dialled until that wait ends.
func TestReconnectWaitsOnTheClock(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	proxy := faultproxy.New(t, strings.TrimPrefix(base, "http://"))
	clock := &fakeClock{fire: make(chan time.Time)}
	opts := &client.Options{Clock: clock, Random: func() float64 { return 0.25 }, PingInterval: -1, HeartbeatInterval: -1,
		BackoffBase: time.Second, BackoffCap: time.Minute}
	a := dialGuest(t, base, "ws://"+proxy.Addr()+"/v1/ws", opts)
	proxy.DropReply([]byte(`"pong"`))
	if err := a.Ping(ctx); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("ping with its reply lost: %v", err)
	}
	lost := next(t, a.Client, 10*time.Second, func(e client.StateEvent) bool { return e.State == client.Reconnecting })
	if lost.Delay != 250*time.Millisecond {
		t.Fatalf("delay %s, want 250ms (a quarter of the first ceiling)", lost.Delay)
	}
	if w := clock.asked(); len(w) != 1 || w[0] != lost.Delay {
		t.Fatalf("the clock was asked for %v", w)
	}
	if a.Connected() {
		t.Fatal("connected before the wait ended")
	}
	clock.fire <- time.Now()
	h := next(t, a.Client, 10*time.Second, func(e client.HelloEvent) bool { return e.Reconnect })
	if h.Hello.UserID != a.g.UserID {
		t.Fatalf("hello after the wait: %+v", h.Hello)
	}
}

// While its socket is down the client keeps its WAITING ticket alive over
// REST; a client that does not is cancelled as a ghost (reason heartbeat).
func TestHeartbeatsWhileAway(t *testing.T) {
	base := startServer(t)
	ctx := testContext(t)
	proxy := faultproxy.New(t, strings.TrimPrefix(base, "http://"))
	socket := "ws://" + proxy.Addr() + "/v1/ws"
	keeper := dialGuest(t, base, socket, &client.Options{HeartbeatInterval: 200 * time.Millisecond, BaseURL: base})
	ghost := dialGuest(t, base, socket, &client.Options{HeartbeatInterval: -1})
	kt, err := keeper.Join(ctx, "lonely", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gt, err := ghost.Join(ctx, "lonely", client.JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy.Close() // both sockets end, and no new one opens
	for _, p := range []player{keeper, ghost} {
		next(t, p.Client, 10*time.Second, func(e client.StateEvent) bool { return e.State == client.Reconnecting })
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		g := restTicket(t, base, ghost.g.Token, gt.ID)
		if g.Status == client.StatusCancelled {
			if g.CancelReason != "heartbeat" {
				t.Fatalf("the ghost's ticket: %+v", g)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ghost's ticket is still %s", g.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if k := restTicket(t, base, keeper.g.Token, kt.ID); k.Status != client.StatusWaiting {
		t.Fatalf("the heartbeating player's ticket: %+v", k)
	}
}

func restTicket(t *testing.T, base, token, id string) client.Ticket {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/tickets/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Ticket client.Ticket }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		t.Fatalf("GET ticket %s: %s", id, resp.Status)
	}
	return v.Ticket
}
