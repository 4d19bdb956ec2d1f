package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/ratelimit"
)

func TestHelloIsFirstFrameWithState(t *testing.T) {
	env := startServer(t, Config{})
	env.mm.userState = func(_ context.Context, userID string) (matcher.UserState, error) {
		return matcher.UserState{
			Tickets: []matcher.Ticket{{ID: "t-9", UserID: userID, Status: matcher.StatusMatched, MatchID: "m-9"}},
			Matches: []matcher.Match{{ID: "m-9", State: matcher.MatchPendingAccept, Players: []matcher.Player{{TicketID: "t-9", UserID: userID}}}},
		}, nil
	}
	c := dial(t, env.wsURL(), mustToken(t, "alice", nil))
	f := readFrame(t, c)
	if f.Type != "hello" || f.UserID != "alice" || f.Node != "node-test" {
		t.Fatalf("first frame = %s", f.raw)
	}
	if len(f.Tickets) != 1 || f.Tickets[0].ID != "t-9" || len(f.Matches) != 1 || f.Matches[0].ID != "m-9" {
		t.Fatalf("hello state = %s", f.raw)
	}
}

func TestHelloEmptyStateHasArrays(t *testing.T) {
	env := startServer(t, Config{})
	c := dial(t, env.wsURL(), mustToken(t, "alice", nil))
	f := readFrame(t, c)
	if !strings.Contains(string(f.raw), `"tickets":[]`) || !strings.Contains(string(f.raw), `"matches":[]`) {
		t.Fatalf("hello = %s, want empty arrays", f.raw)
	}
}

func TestCommandsReplyWithRe(t *testing.T) {
	env := startServer(t, Config{})
	c := dial(t, env.wsURL(), mustToken(t, "alice", ptr(1450.0)))
	readFrame(t, c) // hello

	// Unknown fields are refused (decode.go), with the request id.
	writeJSONFrame(t, c, map[string]any{"type": "join", "id": "r0", "queue": "ranked", "unknownField": true})
	if f := readFrame(t, c); f.Type != "error" || f.Re != "r0" || f.Error.Code != "BAD_REQUEST" || !strings.Contains(f.Error.Message, "unknownField") {
		t.Fatalf("unknown field: %s", f.raw)
	}
	writeJSONFrame(t, c, map[string]any{"type": "join", "id": "r1", "queue": "ranked", "region": "eu",
		"attributes": map[string]string{"mode": "duo"}})
	f := readFrame(t, c)
	if f.Type != "joined" || f.Re != "r1" || f.Ticket == nil || f.Ticket.ID != "t-1" || f.Ticket.Queue != "ranked" {
		t.Fatalf("join reply = %s", f.raw)
	}
	env.mm.mu.Lock()
	req := env.mm.lastReq
	env.mm.mu.Unlock()
	if req.UserID != "alice" || req.Region != "eu" || req.Skill == nil || *req.Skill != 1450 || req.Activity != nil || req.Attributes["mode"] != "duo" {
		t.Fatalf("JoinRequest = %+v", req)
	}

	steps := []struct {
		send map[string]any
		want string
	}{
		{map[string]any{"type": "cancel", "id": "r2", "ticketId": "t-1"}, "cancelled"},
		{map[string]any{"type": "accept", "id": "r3", "matchId": "m-1"}, "match.update"},
		{map[string]any{"type": "decline", "id": "r4", "matchId": "m-1"}, "match.update"},
		{map[string]any{"type": "status", "id": "r5"}, "status"},
		{map[string]any{"type": "ping", "id": "r6"}, "pong"},
	}
	for _, s := range steps {
		writeJSONFrame(t, c, s.send)
		f := readFrame(t, c)
		if f.Type != s.want || f.Re != s.send["id"] {
			t.Fatalf("%v → %s, want %s", s.send, f.raw, s.want)
		}
	}
}

func TestRepliesComeInRequestOrder(t *testing.T) {
	env := startServer(t, Config{})
	env.mm.join = func(ctx context.Context, req matcher.JoinRequest) (matcher.Ticket, error) {
		time.Sleep(20 * time.Millisecond) // slower than the ping behind it
		return matcher.Ticket{ID: "t-1", UserID: req.UserID}, nil
	}
	c := dial(t, env.wsURL(), mustToken(t, "alice", nil))
	readFrame(t, c)
	writeJSONFrame(t, c, map[string]any{"type": "join", "id": "a", "queue": "q"})
	writeJSONFrame(t, c, map[string]any{"type": "ping", "id": "b"})
	if f := readFrame(t, c); f.Re != "a" {
		t.Fatalf("first reply = %s", f.raw)
	}
	if f := readFrame(t, c); f.Re != "b" {
		t.Fatalf("second reply = %s", f.raw)
	}
}

func TestErrorFrames(t *testing.T) {
	env := startServer(t, Config{})
	env.mm.join = func(context.Context, matcher.JoinRequest) (matcher.Ticket, error) {
		return matcher.Ticket{}, &matcher.Error{Code: matcher.CodeAlreadyQueued, Message: "already queued", TicketID: "t-old"}
	}
	env.mm.cancel = func(context.Context, string, string) (matcher.Ticket, error) {
		return matcher.Ticket{}, &matcher.Error{Code: matcher.CodeAlreadyMatched, Message: "matched first", MatchID: "m-won"}
	}
	env.mm.accept = func(context.Context, string, string) (matcher.Match, error) {
		return matcher.Match{}, errors.New("redis: connection refused at 10.0.0.1")
	}
	c := dial(t, env.wsURL(), mustToken(t, "alice", nil))
	readFrame(t, c)

	check := func(what string, send []byte, re, code string, ticketID, matchID *string) {
		t.Helper()
		writeText(t, c, send)
		f := readFrame(t, c)
		if f.Type != "error" || f.Error == nil || f.Error.Code != code || f.Re != re {
			t.Fatalf("%s: got %s, want error %s re %q", what, f.raw, code, re)
		}
		if (ticketID == nil) != (f.Error.TicketID == nil) || ticketID != nil && *ticketID != *f.Error.TicketID {
			t.Fatalf("%s: ticketId in %s", what, f.raw)
		}
		if (matchID == nil) != (f.Error.MatchID == nil) || matchID != nil && *matchID != *f.Error.MatchID {
			t.Fatalf("%s: matchId in %s", what, f.raw)
		}
	}
	check("already queued", []byte(`{"type":"join","id":"1","queue":"q"}`), "1", "ALREADY_QUEUED", ptr("t-old"), nil)
	check("already matched", []byte(`{"type":"cancel","id":"2","ticketId":"t"}`), "2", "ALREADY_MATCHED", nil, ptr("m-won"))
	check("unknown type", []byte(`{"type":"dance","id":"3"}`), "3", "BAD_REQUEST", nil, nil)
	check("missing type", []byte(`{"id":"4"}`), "4", "BAD_REQUEST", nil, nil)
	check("malformed", []byte(`{"type":`), "", "BAD_REQUEST", nil, nil)
	check("wrong field type", []byte(`{"type":"join","id":"5","queue":7}`), "5", "BAD_REQUEST", nil, nil)
	check("missing queue", []byte(`{"type":"join","id":"6"}`), "6", "BAD_REQUEST", nil, nil)
	check("missing ticket", []byte(`{"type":"cancel","id":"7"}`), "7", "BAD_REQUEST", nil, nil)
	check("missing match", []byte(`{"type":"accept","id":"8"}`), "8", "BAD_REQUEST", nil, nil)
	check("long id", []byte(`{"type":"ping","id":"`+strings.Repeat("x", 65)+`"}`), "", "BAD_REQUEST", nil, nil)

	attrs := map[string]string{}
	for i := range 17 {
		attrs[fmt.Sprint("k", i)] = "v"
	}
	joins := env.mm.called("join")
	for name, a := range map[string]map[string]string{
		"too many":   attrs,
		"long key":   {strings.Repeat("k", 33): "v"},
		"long value": {"k": strings.Repeat("v", 65)},
		"empty key":  {"": "v"},
	} {
		writeJSONFrame(t, c, map[string]any{"type": "join", "id": name, "queue": "q", "attributes": a})
		f := readFrame(t, c)
		if f.Type != "error" || f.Error.Code != "BAD_REQUEST" || f.Re != name {
			t.Fatalf("attributes %s: %s", name, f.raw)
		}
	}
	if env.mm.called("join") != joins {
		t.Fatal("Join called with invalid attributes")
	}

	// Internal errors do not leak their text.
	writeText(t, c, []byte(`{"type":"accept","id":"9","matchId":"m"}`))
	f := readFrame(t, c)
	if f.Error == nil || f.Error.Code != "INTERNAL" || strings.Contains(string(f.raw), "redis") {
		t.Fatalf("internal: %s", f.raw)
	}

	// Binary frames get an error frame and the socket stays open.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if f := readFrame(t, c); f.Type != "error" || f.Error.Code != "BAD_REQUEST" {
		t.Fatalf("binary: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"ping","id":"10"}`))
	if f := readFrame(t, c); f.Type != "pong" {
		t.Fatalf("after binary: %s", f.raw)
	}
}

func TestPushReachesEverySocketOfTheUser(t *testing.T) {
	env := startServer(t, Config{})
	tok := mustToken(t, "bob", nil)
	c1 := dial(t, env.wsURL(), tok)
	c2 := dial(t, env.wsURL(), tok)
	other := dial(t, env.wsURL(), mustToken(t, "carol", nil))
	for _, c := range []*websocket.Conn{c1, c2, other} {
		readFrame(t, c)
	}
	if n := env.sub.publish("bob", []byte(`{"type":"match.found","match":{"id":"m-1"}}`)); n != 2 {
		t.Fatalf("bob has %d subscriptions, want 2", n)
	}
	for _, c := range []*websocket.Conn{c1, c2} {
		if f := readFrame(t, c); f.Type != "match.found" || f.Match == nil || f.Match.ID != "m-1" {
			t.Fatalf("push = %s", f.raw)
		}
	}
	// Closing a socket unsubscribes it and does not cancel anything.
	_ = c1.Close(websocket.StatusNormalClosure, "bye")
	eventually(t, 5*time.Second, "unsubscribe", func() bool { return env.sub.count("bob") == 1 })
	if env.mm.called("cancel") != 0 {
		t.Fatal("closing a socket cancelled a ticket")
	}
	env.sub.publish("bob", []byte(`{"type":"ticket.update","seq":2}`))
	if f := readFrame(t, c2); f.Seq != 2 {
		t.Fatalf("push after close = %s", f.raw)
	}
	eventually(t, 5*time.Second, "metrics", func() bool {
		return metricValue(t, env.reg, "matchgate_ws_messages_sent_total", "type", "match.found") == 2 &&
			metricValue(t, env.reg, "matchgate_ws_connections_closed_total", "code", "1000") == 1
	})
}

func TestPushDuringStateLoadIsDeliveredAfterHello(t *testing.T) {
	env := startServer(t, Config{})
	release := make(chan struct{})
	env.mm.userState = func(ctx context.Context, userID string) (matcher.UserState, error) {
		<-release
		return matcher.UserState{Tickets: []matcher.Ticket{{ID: "t-1", UserID: userID, Status: matcher.StatusWaiting}}}, nil
	}
	type result struct {
		c   *websocket.Conn
		err error
	}
	dialed := make(chan result, 1)
	go func() {
		c, err := tryDial(env.wsURL(), mustToken(t, "dave", nil), nil)
		dialed <- result{c, err}
	}()
	env.sub.waitSubscribed(t, "dave", 1)
	// The state is loading; the match forms now.
	if n := env.sub.publish("dave", []byte(`{"type":"match.found","match":{"id":"m-7"}}`)); n != 1 {
		t.Fatalf("published to %d subscriptions", n)
	}
	close(release)
	r := <-dialed
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.c.CloseNow()
	if f := readFrame(t, r.c); f.Type != "hello" {
		t.Fatalf("first frame = %s", f.raw)
	}
	if f := readFrame(t, r.c); f.Type != "match.found" || f.Match.ID != "m-7" {
		t.Fatalf("second frame = %s", f.raw)
	}
}

func TestOversizedFrameCloses1009(t *testing.T) {
	env := startServer(t, Config{MaxFrameBytes: 1024})
	c := dial(t, env.wsURL(), mustToken(t, "erin", nil))
	readFrame(t, c)
	writeText(t, c, []byte(`{"type":"ping","pad":"`+strings.Repeat("x", 2000)+`"}`))
	if code := waitCloseStatus(t, c); code != websocket.StatusMessageTooBig {
		t.Fatalf("close code = %v, want 1009", code)
	}
	eventually(t, 5*time.Second, "closed metric", func() bool {
		return metricValue(t, env.reg, "matchgate_ws_connections_closed_total", "code", "1009") == 1
	})
}

func TestSlowConsumerIsDisconnectedWithoutBlockingFanOut(t *testing.T) {
	env := startServer(t, Config{SendQueue: 8, WriteTimeout: 300 * time.Millisecond})
	slow := dial(t, env.wsURL(), mustToken(t, "slow", nil))
	readFrame(t, slow) // hello; from now on it never reads
	fast := dial(t, env.wsURL(), mustToken(t, "fast", nil))
	readFrame(t, fast)

	got := make(chan int, 10000)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(got)
		for {
			f, err := tryReadFrame(fast, 10*time.Second)
			if err != nil {
				return
			}
			got <- f.Seq
		}
	})

	// Each round pushes a big frame to the slow socket and a small one to
	// the fast socket, then checks the fast socket received its frame: the
	// fast player keeps getting pushes while the slow one's queue fills up.
	big := []byte(`{"type":"ticket.update","pad":"` + strings.Repeat("x", 64<<10) + `"}`)
	var slowest time.Duration
	for i := 1; metricValue(t, env.reg, "matchgate_ws_send_queue_overflows_total") == 0; i++ {
		if i > 3000 {
			t.Fatal("no overflow after 3000 frames")
		}
		start := time.Now()
		env.sub.publish("slow", big)
		env.sub.publish("fast", fmt.Appendf(nil, `{"type":"ticket.update","seq":%d}`, i))
		slowest = max(slowest, time.Since(start))
		select {
		case seq := <-got:
			if seq != i {
				t.Fatalf("fast socket got seq %d, want %d", seq, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("fast socket did not get seq %d", i)
		}
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("a publish took %v: fan-out blocked on a slow socket", slowest)
	}
	eventually(t, 10*time.Second, "slow socket closed", func() bool {
		return env.srv.sessionCount() == 1 && env.sub.count("slow") == 0
	})
	if v := metricValue(t, env.reg, "matchgate_ws_send_queue_overflows_total"); v != 1 {
		t.Errorf("overflows = %v, want 1 (only the slow socket)", v)
	}
	if v := metricValue(t, env.reg, "matchgate_ws_connections_closed_total", "code", "1008"); v != 1 {
		t.Errorf("closed{1008} = %v", v)
	}
	_ = slow.CloseNow()
	_ = fast.CloseNow()
	wg.Wait()
}

// A socket that stops reading while its queue has room is dropped once a
// write has waited WriteTimeout: the writer does not hang on it.
func TestStalledWriteDropsSocket(t *testing.T) {
	env := startServer(t, Config{SendQueue: 4096, SendQueueBytes: 64 << 20, WriteTimeout: 300 * time.Millisecond})
	stalled := dial(t, env.wsURL(), mustToken(t, "stalled", nil))
	readFrame(t, stalled) // hello; from now on it never reads
	defer stalled.CloseNow()
	// About 25 MiB: more than loopback's socket buffers hold.
	big := []byte(`{"type":"ticket.update","pad":"` + strings.Repeat("x", 64<<10) + `"}`)
	for range 400 {
		env.sub.publish("stalled", big)
	}
	eventually(t, 10*time.Second, "stalled socket dropped", func() bool {
		return env.srv.sessionCount() == 0
	})
	if v := metricValue(t, env.reg, "matchgate_ws_send_queue_overflows_total"); v != 0 {
		t.Errorf("overflows = %v, want 0: the write timeout, not the queue, should end it", v)
	}
}

func TestUnansweredPingDropsSocket(t *testing.T) {
	env := startServer(t, Config{PingInterval: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond})
	live := dial(t, env.wsURL(), mustToken(t, "live", nil))
	readFrame(t, live)
	var wg sync.WaitGroup
	wg.Go(func() { waitCloseStatus(t, live) })      // reads, so it answers pings
	dial(t, env.wsURL(), mustToken(t, "dead", nil)) // never reads: never answers
	eventually(t, 10*time.Second, "dead socket dropped", func() bool {
		return metricValue(t, env.reg, "matchgate_ws_connections_closed_total", "code", "4408") == 1
	})
	if env.srv.sessionCount() != 1 || metricValue(t, env.reg, "matchgate_ws_ping_rtt_seconds") == 0 {
		t.Fatal("the live socket should stay and report ping round trips")
	}
	_ = live.CloseNow()
	wg.Wait()
}

// TestPingerSpreadsSocketsOverTheInterval: each socket is pinged and its
// lease renewed once per PingInterval at a phase of its own, not all of them
// in one burst.
func TestPingerSpreadsSocketsOverTheInterval(t *testing.T) {
	const sockets, interval = 20, 200 * time.Millisecond // 20 slots, 10 ms apart
	renews := &renewLog{at: map[string][]time.Time{}}
	env := startServer(t, Config{PingInterval: interval, Sockets: renews})
	var wg sync.WaitGroup
	for i := range sockets {
		c := dial(t, env.wsURL(), mustToken(t, fmt.Sprint("spread", i), nil))
		readFrame(t, c)
		wg.Go(func() { waitCloseStatus(t, c) }) // reads, so it answers pings
	}
	eventually(t, 10*time.Second, "every socket's lease renewed three times", func() bool {
		renews.mu.Lock()
		defer renews.mu.Unlock()
		if len(renews.at) < sockets {
			return false
		}
		for _, at := range renews.at {
			if len(at) < 3 {
				return false
			}
		}
		return true
	})
	renews.mu.Lock()
	for _, n := range renews.sizes {
		if n > 1 {
			t.Errorf("a renewal carried %d leases: 20 sockets in 20 slots should be renewed one at a time (sizes %v)", n, renews.sizes)
			break
		}
	}
	for id, at := range renews.at {
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < interval/2 {
				t.Errorf("socket %s renewed %v after the previous renewal, want about %v", id, gap, interval)
			}
		}
	}
	renews.mu.Unlock()
	if n := metricValue(t, env.reg, "matchgate_ws_ping_rtt_seconds"); n < sockets {
		t.Errorf("%v pings answered, want every socket pinged", n)
	}
	_ = env.stop() // closes the sockets: their readers return
	wg.Wait()
}

// renewLog is a SocketLimiter that admits every socket and records each
// Renew: the number of leases and when each socket's lease was renewed.
type renewLog struct {
	mu    sync.Mutex
	sizes []int
	at    map[string][]time.Time
}

func (r *renewLog) Acquire(context.Context, string, string, int) (bool, error) { return true, nil }
func (r *renewLog) Release(context.Context, string, string) error              { return nil }
func (r *renewLog) Renew(_ context.Context, leases []ratelimit.Lease) error {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sizes = append(r.sizes, len(leases))
	for _, l := range leases {
		r.at[l.SocketID] = append(r.at[l.SocketID], now)
	}
	return nil
}

func TestExpiredTokenClosesSocket4401(t *testing.T) {
	clock := newFakeClock(time.Now())
	env := startServer(t, Config{Now: clock.Now, PingInterval: 50 * time.Millisecond})
	tok, err := MintToken(testSecret, "frank", nil, time.Minute, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, env.wsURL(), tok)
	readFrame(t, c)
	clock.Advance(2 * time.Minute)
	if code := waitCloseStatus(t, c); code != CloseUnauthorized {
		t.Fatalf("close code = %v, want 4401", code)
	}
}

func TestUpgradeRefusals(t *testing.T) {
	env := startServer(t, Config{})
	status := func(err error) int {
		var de *dialError
		if errors.As(err, &de) {
			return de.status
		}
		return 0
	}
	if _, err := tryDial(env.wsURL(), "", nil); status(err) != http.StatusUnauthorized {
		t.Fatalf("no token: %v", err)
	}
	if _, err := tryDial(env.wsURL(), "garbage", nil); status(err) != http.StatusUnauthorized {
		t.Fatalf("bad token: %v", err)
	}
	// Authorization header works for non-browser clients.
	c, err := tryDial(env.wsURL(), "", http.Header{"Authorization": {"Bearer " + mustToken(t, "gina", nil)}})
	if err != nil {
		t.Fatalf("bearer header: %v", err)
	}
	readFrame(t, c)
	_ = c.CloseNow()
	// A foreign Origin is refused.
	if _, err := tryDial(env.wsURL(), mustToken(t, "gina", nil), http.Header{"Origin": {"https://evil.example"}}); status(err) != http.StatusForbidden {
		t.Fatalf("foreign origin: %v", err)
	}
	// While draining: 503.
	env.srv.mu.Lock()
	env.srv.draining = true
	env.srv.mu.Unlock()
	if _, err := tryDial(env.wsURL(), mustToken(t, "gina", nil), nil); status(err) != http.StatusServiceUnavailable {
		t.Fatalf("draining: %v", err)
	}
}

func TestAllowedOrigins(t *testing.T) {
	env := startServer(t, Config{AllowedOrigins: []string{"app.example.com"}})
	c, err := tryDial(env.wsURL(), mustToken(t, "hank", nil), http.Header{"Origin": {"https://app.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	readFrame(t, c)
	_ = c.CloseNow()
}

func TestConnectFailures(t *testing.T) {
	t.Run("subscribe", func(t *testing.T) {
		env := startServer(t, Config{})
		env.sub.fail = errors.New("redis down")
		c := dial(t, env.wsURL(), mustToken(t, "ivan", nil))
		if code := waitCloseStatus(t, c); code != CloseTryAgainLater {
			t.Fatalf("close code = %v, want 1013", code)
		}
	})
	t.Run("state", func(t *testing.T) {
		env := startServer(t, Config{})
		env.mm.userState = func(context.Context, string) (matcher.UserState, error) {
			return matcher.UserState{}, errors.New("ledger down")
		}
		c := dial(t, env.wsURL(), mustToken(t, "ivan", nil))
		if code := waitCloseStatus(t, c); code != CloseInternal {
			t.Fatalf("close code = %v, want 1011", code)
		}
		eventually(t, 5*time.Second, "unsubscribe", func() bool { return env.sub.count("ivan") == 0 })
	})
}

func TestTooManyCommandsInFlight(t *testing.T) {
	env := startServer(t, Config{})
	release := make(chan struct{})
	env.mm.join = func(ctx context.Context, req matcher.JoinRequest) (matcher.Ticket, error) {
		<-release
		return matcher.Ticket{ID: "t"}, nil
	}
	c := dial(t, env.wsURL(), mustToken(t, "jo", nil))
	readFrame(t, c)
	writeJSONFrame(t, c, map[string]any{"type": "join", "id": "blocker", "queue": "q"})
	eventually(t, 5*time.Second, "join running", func() bool { return env.mm.called("join") == 1 })
	for i := range maxPendingCommands + 1 {
		writeJSONFrame(t, c, map[string]any{"type": "ping", "id": fmt.Sprint(i)})
	}
	f := readFrame(t, c)
	if f.Type != "error" || f.Error.Code != "RATE_LIMITED" || f.Re != fmt.Sprint(maxPendingCommands) {
		t.Fatalf("overflowing command: %s", f.raw)
	}
	close(release)
	if f := readFrame(t, c); f.Re != "blocker" {
		t.Fatalf("after release: %s", f.raw)
	}
}

// The send queue is bounded in bytes too: pushes that wait (here while the
// state loads, so nothing is written yet) close the socket with
// CloseSlowConsumer on the first frame that passes the budget, not before,
// however many frames the count would still allow.
func TestSendQueueByteBudget(t *testing.T) {
	const budget = 10_000
	env := startServer(t, Config{SendQueue: 100_000, SendQueueBytes: budget})
	release := make(chan struct{})
	env.mm.userState = func(ctx context.Context, userID string) (matcher.UserState, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return matcher.UserState{}, nil
	}
	done := make(chan *websocket.Conn, 1)
	go func() {
		c, err := tryDial(env.wsURL(), mustToken(t, "slow", nil), nil)
		if err != nil {
			t.Error(err)
		}
		done <- c
	}()
	env.sub.waitSubscribed(t, "slow", 1)
	frame := []byte(`{"type":"ticket.update","pad":"` + strings.Repeat("x", 1000-33) + `"}`)
	if len(frame) != 1000 {
		t.Fatalf("frame of %d bytes", len(frame))
	}
	for i := range budget / len(frame) {
		env.sub.publish("slow", frame)
		if v := metricValue(t, env.reg, "matchgate_ws_send_queue_overflows_total"); v != 0 {
			t.Fatalf("closed after %d bytes, within the budget of %d", (i+1)*len(frame), budget)
		}
	}
	env.sub.publish("slow", frame) // one byte past the budget
	if v := metricValue(t, env.reg, "matchgate_ws_send_queue_overflows_total"); v != 1 {
		t.Fatalf("overflows = %v after passing the byte budget, want 1", v)
	}
	close(release)
	c := <-done
	if c == nil {
		return
	}
	if code := waitCloseStatus(t, c); code != CloseSlowConsumer {
		t.Fatalf("closed with %v, want %v", code, CloseSlowConsumer)
	}
}

// The byte count of the send queue follows the frames in and out: after
// many pushes raced against the writer (all of them fit in the budget at
// once), an idle socket counts zero bytes.
func TestSendQueueBytesReturnToZero(t *testing.T) {
	env := startServer(t, Config{SendQueue: 1 << 20, SendQueueBytes: 1 << 20})
	c := dial(t, env.wsURL(), mustToken(t, "reader", nil))
	readFrame(t, c) // hello
	const pushes = 2000
	frame := []byte(`{"type":"ticket.update","pad":"` + strings.Repeat("x", 200) + `"}`)
	done := make(chan error, 1)
	go func() {
		for range pushes {
			if _, err := tryReadFrame(c, 10*time.Second); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var wg sync.WaitGroup
	for range 4 { // four publishers at once, as several events for one user
		wg.Go(func() {
			for range pushes / 4 {
				env.sub.publish("reader", frame)
			}
		})
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatalf("reading the pushes: %v (overflows %v)", err, metricValue(t, env.reg, "matchgate_ws_send_queue_overflows_total"))
	}
	env.srv.mu.Lock()
	sessions := env.srv.snapshotLocked()
	env.srv.mu.Unlock()
	if len(sessions) != 1 {
		t.Fatalf("%d sessions", len(sessions))
	}
	eventually(t, 5*time.Second, "an idle queue counts no bytes", func() bool {
		s := sessions[0]
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.writing && len(s.out) == 0 && s.outBytes == 0
	})
}
