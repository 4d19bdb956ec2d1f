package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/ratelimit"
)

func TestStrictBodies(t *testing.T) {
	e := newRESTEnv(t, Config{Guests: true})
	tok := mustToken(t, "alice", nil)
	for name, body := range map[string]string{
		"unknown field":         `{"region":"eu","regoin":"na"}`,
		"duplicate key":         `{"region":"eu","region":"na"}`,
		"case-folded duplicate": `{"region":"eu","Region":"na"}`,
		"case-folded name":      `{"REGION":"eu"}`,
		"nested duplicate":      `{"attributes":{"mode":"a","mode":"b"}}`,
		"array":                 `[{"region":"eu"}]`,
		"string":                `"eu"`,
		"number":                `1`,
		"null":                  `null`,
		"trailing garbage":      `{"region":"eu"}x`,
		"two objects":           `{}{}`,
		"deep":                  `{"attributes":{"a":` + strings.Repeat(`[`, 20) + strings.Repeat(`]`, 20) + `}}`,
		"attribute object":      `{"attributes":{"mode":{"x":1}}}`,
		"control in attribute":  `{"attributes":{"mode":"a\u0000b"}}`,
		"newline in attribute":  `{"attributes":{"mo\nde":"a"}}`,
		"invalid utf-8":         "{\"attributes\":{\"mode\":\"\xff\"}}",
	} {
		r := e.do(t, "POST", "/v1/queues/ranked/tickets", tok, body)
		if r.status != http.StatusBadRequest || r.errorCode() != "BAD_REQUEST" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if r := e.do(t, "POST", "/v1/auth/guest", "", `{"skill":1500,"role":"admin"}`); r.status != http.StatusBadRequest {
		t.Errorf("guest with an unknown field: %d %s", r.status, r.body)
	}
	// A name is cleaned, not refused (matcher.CleanName; see auth_test.go).
	if r := e.do(t, "POST", "/v1/auth/guest", "", `{"name":"a\u0007b"}`); r.status != http.StatusOK || !strings.Contains(string(r.body), `"name":"ab"`) {
		t.Errorf("guest name with a control character: %d %s", r.status, r.body)
	}
	if n := e.mm.called("join"); n != 0 {
		t.Fatalf("Join called %d times with bad bodies", n)
	}
	if r := e.do(t, "POST", "/v1/queues/ranked/tickets", tok, ` {"region":"eu"} `+"\n"); r.status != http.StatusAccepted {
		t.Fatalf("a good body with white space: %d %s", r.status, r.body)
	}
}

// TestNamesCheckedBeforeTheMatchmaker: queue and region names and ticket and
// match ids that could not be configuration never reach the Matchmaker (so
// never a Redis key or a query).
func TestNamesCheckedBeforeTheMatchmaker(t *testing.T) {
	e := newRESTEnv(t, Config{})
	tok := mustToken(t, "alice", nil)
	for path, want := range map[string]string{
		"/v1/queues/Ranked/tickets":                          "UNKNOWN_QUEUE",
		"/v1/queues/ranked%27--/tickets":                     "UNKNOWN_QUEUE",
		"/v1/queues/%7Bmg%7D:pool/tickets":                   "UNKNOWN_QUEUE",
		"/v1/queues/" + strings.Repeat("q", 49) + "/tickets": "UNKNOWN_QUEUE",
	} {
		if r := e.do(t, "POST", path, tok, `{}`); r.status != 400 || r.errorCode() != want {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	for _, region := range []string{"EU", "eu'; DROP TABLE tickets; --", "eu\"]]) redis.call('FLUSHALL') --", "*"} {
		body := fmt.Sprintf(`{"region":%q}`, region)
		if r := e.do(t, "POST", "/v1/queues/ranked/tickets", tok, body); r.status != 400 || r.errorCode() != "BAD_REQUEST" {
			t.Errorf("region %q: %d %s", region, r.status, r.body)
		}
	}
	for _, path := range []string{
		"/v1/tickets/" + strings.Repeat("a", 65), "/v1/tickets/a%27%20OR%201=1", "/v1/tickets/%00",
	} {
		if r := e.do(t, "GET", path, tok, ""); r.status != 404 || r.errorCode() != "NOT_FOUND" || strings.Contains(string(r.body), "OR 1") {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
		if r := e.do(t, "DELETE", path, tok, ""); r.status != 404 {
			t.Errorf("DELETE %s: %d %s", path, r.status, r.body)
		}
	}
	if r := e.do(t, "POST", "/v1/matches/m%27--/accept", tok, ""); r.status != 404 {
		t.Errorf("accept with a bad id: %d %s", r.status, r.body)
	}
	for _, call := range []string{"join", "ticket", "cancel", "accept"} {
		if n := e.mm.called(call); n != 0 {
			t.Errorf("%s called %d times", call, n)
		}
	}
}

func TestStrictFrames(t *testing.T) {
	env := startServer(t, Config{})
	c := dial(t, env.wsURL(), mustToken(t, "alice", nil))
	readFrame(t, c)
	for name, tc := range map[string]struct{ frame, re string }{
		"duplicate type":      {`{"type":"ping","type":"join","id":"1"}`, "1"},
		"duplicate attribute": {`{"type":"join","id":"2","queue":"q","attributes":{"a":"1","a":"2"}}`, "2"},
		"foreign field":       {`{"type":"cancel","id":"3","ticketId":"t","queue":"q"}`, "3"},
		"ping with a field":   {`{"type":"ping","id":"4","matchId":"m"}`, "4"},
		"unknown field":       {`{"type":"status","id":"5","admin":true}`, "5"},
		"case-folded type":    {`{"type":"ping","Type":"join","id":"10","queue":"q"}`, "10"},
		"upper-case name":     {`{"TYPE":"ping","id":"11"}`, "11"},
		"array":               {`[{"type":"ping"}]`, ""},
		"bad queue":           {`{"type":"join","id":"6","queue":"Q'--"}`, "6"},
		"bad region":          {`{"type":"join","id":"7","queue":"q","region":"*"}`, "7"},
		"bad ticket id":       {`{"type":"cancel","id":"8","ticketId":"' OR 1=1 --"}`, "8"},
		"bad match id":        {`{"type":"accept","id":"9","matchId":"{x}"}`, "9"},
	} {
		writeText(t, c, []byte(tc.frame))
		f := readFrame(t, c)
		if f.Type != "error" || f.Re != tc.re || f.Error == nil || (f.Error.Code != "BAD_REQUEST" && f.Error.Code != "UNKNOWN_QUEUE" && f.Error.Code != "NOT_FOUND") {
			t.Errorf("%s: %s", name, f.raw)
		}
	}
	for _, call := range []string{"join", "cancel", "accept"} {
		if n := env.mm.called(call); n != 0 {
			t.Errorf("%s called %d times", call, n)
		}
	}
	writeText(t, c, []byte(`{"type":"ping","id":"ok"}`))
	if f := readFrame(t, c); f.Type != "pong" {
		t.Fatalf("socket unusable after bad frames: %s", f.raw)
	}
}

func TestForwardedFor(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	peer := netip.MustParseAddr("127.0.0.1")
	for _, tc := range []struct {
		peer   string
		header []string
		want   string
	}{
		{"127.0.0.1", nil, "127.0.0.1"},
		{"127.0.0.1", []string{"203.0.113.7"}, "203.0.113.7"},
		{"127.0.0.1", []string{"198.51.100.1, 203.0.113.7"}, "203.0.113.7"}, // the client's own claim is left of ours
		{"127.0.0.1", []string{"203.0.113.7, 10.1.2.3"}, "203.0.113.7"},     // through two of our proxies
		{"127.0.0.1", []string{"203.0.113.7", "10.1.2.3"}, "203.0.113.7"},   // as two header lines
		{"127.0.0.1", []string{"junk, 10.1.2.3"}, "10.1.2.3"},               // garbage stops the walk
		{"127.0.0.1", []string{"10.9.9.9, 10.1.2.3"}, "10.9.9.9"},           // all trusted: the left-most
		{"127.0.0.1", []string{"[2001:db8::1]:443"}, "2001:db8::1"},         // with a port
		{"127.0.0.1", []string{"::ffff:203.0.113.7"}, "203.0.113.7"},        // v4-mapped
		{"192.0.2.9", []string{"203.0.113.7"}, "192.0.2.9"},                 // untrusted peer: header ignored
		{"127.0.0.1", []string{strings.Repeat("10.0.0.1,", 100) + "203.0.113.7"}, "203.0.113.7"},
	} {
		p := netip.MustParseAddr(tc.peer)
		if tc.peer == "127.0.0.1" {
			p = peer
		}
		if got := forwardedFor(p, tc.header, trusted); got.String() != tc.want {
			t.Errorf("%s %q: got %s, want %s", tc.peer, tc.header, got, tc.want)
		}
	}
	if s := ipSubject(netip.MustParseAddr("2001:db8:1:2:3:4:5:6")); s != "2001:db8:1:2::/64" {
		t.Errorf("IPv6 subject %s", s)
	}
	if s := ipSubject(netip.Addr{}); s != "unknown" {
		t.Errorf("invalid subject %s", s)
	}
}

// newLimiter is a shared limiter on miniredis (its own prefix).
func newLimiter(t *testing.T) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(ratelimit.Config{Redis: redistest.Mini(t), Prefix: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestJoinLimits(t *testing.T) {
	e := newRESTEnv(t, Config{
		Limiter:        newLimiter(t),
		Limits:         Limits{JoinsPerUser: ratelimit.Limit{N: 3, Per: time.Minute}, JoinsPerIP: ratelimit.Limit{N: 5, Per: time.Minute}},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	join := func(user, xff string) response {
		t.Helper()
		req, _ := http.NewRequest("POST", e.url+"/v1/queues/ranked/tickets", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+mustToken(t, user, nil))
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, b}
	}
	for i := range 3 {
		if r := join("alice", "203.0.113.1"); r.status != 202 {
			t.Fatalf("alice join %d: %d %s", i, r.status, r.body)
		}
	}
	r := join("alice", "203.0.113.2") // another address: the per-user limit holds
	if r.status != 429 || r.errorCode() != "RATE_LIMITED" || r.header.Get("Retry-After") != "20" || !strings.Contains(string(r.body), `"retryAfter":20`) {
		t.Fatalf("4th join of alice: %d %v %s", r.status, r.header, r.body)
	}
	// Per IP: two more users from the first address use up its 5.
	for _, u := range []string{"bob", "carol"} {
		if r := join(u, "203.0.113.1"); r.status != 202 {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
	}
	if r := join("dave", "203.0.113.1"); r.status != 429 {
		t.Fatalf("6th join from one address: %d %s", r.status, r.body)
	}
	if r := join("dave", "203.0.113.3"); r.status != 202 {
		t.Fatalf("dave from elsewhere: %d %s", r.status, r.body)
	}
	if n := e.mm.called("join"); n != 6 {
		t.Fatalf("Join called %d times, want 6", n)
	}
	if v := metricValue(t, e.srv.gatherer, "matchgate_refusals_total", "reason", "join_user"); v != 1 {
		t.Errorf("refusals{join_user} = %v", v)
	}
}

// failingLimiter is a limiter whose Redis is down.
type failingLimiter struct{}

func (failingLimiter) Allow(context.Context, string, string, ratelimit.Limit) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, errors.New("redis: connection refused")
}

func TestLimiterFailureLetsThrough(t *testing.T) {
	e := newRESTEnv(t, Config{Limiter: failingLimiter{}, Limits: Limits{JoinsPerUser: ratelimit.Limit{N: 1, Per: time.Hour}}})
	tok := mustToken(t, "alice", nil)
	for range 3 {
		if r := e.do(t, "POST", "/v1/queues/ranked/tickets", tok, `{}`); r.status != 202 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	if v := metricValue(t, e.srv.gatherer, "matchgate_rate_limiter_errors_total"); v != 3 {
		t.Fatalf("limiter errors = %v", v)
	}
}

func TestConnectAndGuestLimitsPerIP(t *testing.T) {
	env := startServer(t, Config{
		Guests:         true,
		Limiter:        newLimiter(t),
		Limits:         Limits{ConnectsPerIP: ratelimit.Limit{N: 3, Per: time.Minute}, GuestsPerIP: ratelimit.Limit{N: 2, Per: time.Minute}},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		LimitExempt:    []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
	})
	from := func(ip string) http.Header { return http.Header{"X-Forwarded-For": {ip}} }
	// Forged tokens count too: the limit comes before the token check.
	for i := range 2 {
		if _, err := tryDial(env.wsURL(), "forged", from("203.0.113.9")); err == nil || !strings.Contains(err.Error(), "status 401") {
			t.Fatalf("forged %d: %v", i, err)
		}
	}
	c, err := tryDial(env.wsURL(), mustToken(t, "alice", nil), from("203.0.113.9"))
	if err != nil {
		t.Fatalf("3rd connect: %v", err)
	}
	readFrame(t, c)
	if _, err := tryDial(env.wsURL(), mustToken(t, "bob", nil), from("203.0.113.9")); err == nil || !strings.Contains(err.Error(), "status 429") {
		t.Fatalf("4th connect from one address: %v", err)
	}
	if c2, err := tryDial(env.wsURL(), mustToken(t, "bob", nil), from("203.0.113.10")); err != nil {
		t.Fatalf("another address: %v", err)
	} else {
		_ = c2.CloseNow()
	}
	for i := range 5 {
		if c3, err := tryDial(env.wsURL(), mustToken(t, "exempt", nil), from("192.0.2.1")); err != nil {
			t.Fatalf("exempt address, connect %d: %v", i, err)
		} else {
			readFrame(t, c3)
			_ = c3.CloseNow()
		}
	}
	guest := func(ip string) int {
		req, _ := http.NewRequest("POST", env.base+"/v1/auth/guest", strings.NewReader(`{}`))
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b, c := guest("203.0.113.20"), guest("203.0.113.20"), guest("203.0.113.20"); a != 200 || b != 200 || c != 429 {
		t.Fatalf("guests from one address: %d %d %d", a, b, c)
	}
	_ = c.CloseNow()
}

func TestMessageRate(t *testing.T) {
	env := startServer(t, Config{MessageRate: ratelimit.Limit{N: 5, Per: time.Second}})
	c := dial(t, env.wsURL(), mustToken(t, "flood", nil))
	readFrame(t, c)
	// A burst over the limit: the first 5 answered, one RATE_LIMITED for
	// the rest, which are dropped.
	for i := range 8 {
		writeJSONFrame(t, c, map[string]any{"type": "ping", "id": fmt.Sprint(i)})
	}
	var pongs, limited int
	for range 6 {
		f := readFrame(t, c)
		switch {
		case f.Type == "pong":
			pongs++
		case f.Type == "error" && f.Error.Code == "RATE_LIMITED":
			limited++
		default:
			t.Fatalf("unexpected %s", f.raw)
		}
	}
	if pongs != 5 || limited != 1 {
		t.Fatalf("%d pongs, %d RATE_LIMITED", pongs, limited)
	}
	// The dropped frames were not answered: once the bucket has refilled,
	// the next frame's reply is the next frame read. (A Read with a deadline
	// would close the socket: coder/websocket closes on a cancelled Read.)
	time.Sleep(1100 * time.Millisecond)
	writeJSONFrame(t, c, map[string]any{"type": "ping", "id": "after"})
	if f := readFrame(t, c); f.Type != "pong" || f.Re != "after" {
		t.Fatalf("after the burst: %s", f.raw)
	}
	// Going on regardless closes the socket with 4429.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		for i := 0; i < 50; i++ {
			if c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)) != nil {
				return
			}
		}
	}()
	if code := waitCloseStatus(t, c); code != CloseTooManyMessages {
		t.Fatalf("close code %v, want 4429", code)
	}
	if v := metricValue(t, env.reg, "matchgate_ws_connections_closed_total", "code", "4429"); v != 1 {
		eventually(t, 5*time.Second, "4429 recorded", func() bool {
			return metricValue(t, env.reg, "matchgate_ws_connections_closed_total", "code", "4429") == 1
		})
	}
}

func TestConnectionCaps(t *testing.T) {
	status := func(err error) int {
		var de *dialError
		if errors.As(err, &de) {
			return de.status
		}
		return 0
	}
	t.Run("node", func(t *testing.T) {
		env := startServer(t, Config{MaxConnections: 2})
		for _, u := range []string{"a", "b"} {
			readFrame(t, dial(t, env.wsURL(), mustToken(t, u, nil)))
		}
		if _, err := tryDial(env.wsURL(), mustToken(t, "c", nil), nil); status(err) != http.StatusServiceUnavailable {
			t.Fatalf("3rd socket on a node capped at 2: %v", err)
		}
	})
	t.Run("user", func(t *testing.T) {
		env := startServer(t, Config{MaxSocketsPerUser: 2})
		first := dial(t, env.wsURL(), mustToken(t, "u", nil))
		readFrame(t, first)
		readFrame(t, dial(t, env.wsURL(), mustToken(t, "u", nil)))
		if _, err := tryDial(env.wsURL(), mustToken(t, "u", nil), nil); status(err) != http.StatusTooManyRequests {
			t.Fatalf("3rd socket of a user capped at 2: %v", err)
		}
		readFrame(t, dial(t, env.wsURL(), mustToken(t, "other", nil)))
		_ = first.CloseNow()
		eventually(t, 5*time.Second, "a lease back", func() bool {
			c, err := tryDial(env.wsURL(), mustToken(t, "u", nil), nil)
			if err != nil {
				return false
			}
			_ = c.CloseNow()
			return true
		})
	})
	t.Run("user across gateways", func(t *testing.T) {
		rdb := redistest.Mini(t)
		var servers []*testEnv
		for range 2 {
			socks, err := ratelimit.NewSockets(ratelimit.SocketsConfig{Redis: rdb, Prefix: "gw"})
			if err != nil {
				t.Fatal(err)
			}
			servers = append(servers, startServer(t, Config{MaxSocketsPerUser: 2, Sockets: socks}))
		}
		readFrame(t, dial(t, servers[0].wsURL(), mustToken(t, "u", nil)))
		readFrame(t, dial(t, servers[1].wsURL(), mustToken(t, "u", nil)))
		for _, s := range servers {
			if _, err := tryDial(s.wsURL(), mustToken(t, "u", nil), nil); status(err) != http.StatusTooManyRequests {
				t.Fatalf("3rd socket across two gateways: %v", err)
			}
		}
	})
}

// fakeBans is a settable ban list.
type fakeBans struct {
	mu sync.Mutex
	m  map[string]bool
}

func (f *fakeBans) Banned(u string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[u]
}

func (f *fakeBans) set(u string, banned bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]bool{}
	}
	f.m[u] = banned
}

func TestBannedUsers(t *testing.T) {
	bans := &fakeBans{}
	bans.set("mallory", true)
	env := startServer(t, Config{Bans: bans})
	var de *dialError
	if _, err := tryDial(env.wsURL(), mustToken(t, "mallory", nil), nil); !errors.As(err, &de) || de.status != http.StatusForbidden {
		t.Fatalf("banned connect: %v", err)
	}
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	tok := mustToken(t, "mallory", nil)
	for _, rq := range [][2]string{{"POST", "/v1/queues/q/tickets"}, {"GET", "/v1/tickets/t-1"}, {"DELETE", "/v1/tickets/t-1"}} {
		if r := e.do(t, rq[0], rq[1], tok, ""); r.status != http.StatusForbidden || r.errorCode() != "FORBIDDEN" {
			t.Errorf("%s %s: %d %s", rq[0], rq[1], r.status, r.body)
		}
	}
	// Banned while connected: the next join is refused.
	c := dial(t, env.wsURL(), mustToken(t, "eve", nil))
	readFrame(t, c)
	bans.set("eve", true)
	writeJSONFrame(t, c, map[string]any{"type": "join", "id": "j", "queue": "q"})
	if f := readFrame(t, c); f.Type != "error" || f.Error.Code != "FORBIDDEN" {
		t.Fatalf("banned join: %s", f.raw)
	}
	if n := env.mm.called("join"); n != 0 {
		t.Fatalf("Join called %d times for banned users", n)
	}
	if n := env.srv.DisconnectUser("eve", CloseBanned, "banned"); n != 1 {
		t.Fatalf("DisconnectUser closed %d sockets", n)
	}
	if code := waitCloseStatus(t, c); code != CloseBanned {
		t.Fatalf("close code %v, want 4403", code)
	}
}

func TestDrainOnRequest(t *testing.T) {
	env := startServer(t, Config{})
	c := dial(t, env.wsURL(), mustToken(t, "a", nil))
	readFrame(t, c)
	if !env.srv.Drain() || env.srv.Drain() {
		t.Fatal("Drain should report true once")
	}
	if code := waitCloseStatus(t, c); code != websocket.StatusGoingAway {
		t.Fatalf("close code %v, want 1001", code)
	}
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	if r := e.do(t, "GET", "/readyz", "", ""); r.status != 503 {
		t.Fatalf("readyz while drained: %d", r.status)
	}
	if _, err := tryDial(env.wsURL(), mustToken(t, "b", nil), nil); err == nil || !strings.Contains(err.Error(), "status 503") {
		t.Fatalf("upgrade while drained: %v", err)
	}
	// REST still answers.
	if r := e.do(t, "GET", "/v1/tickets/t-1", mustToken(t, "a", nil), ""); r.status != 200 {
		t.Fatalf("REST while drained: %d", r.status)
	}
}

// clockLimiter is a shared limiter on miniredis whose clock the test moves.
func clockLimiter(t *testing.T) (*ratelimit.Limiter, *fakeClock) {
	t.Helper()
	clk := newFakeClock(time.Now())
	l, err := ratelimit.New(ratelimit.Config{Redis: redistest.Mini(t), Prefix: "gw", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

// floodBound is the most events of a flood lasting d that lim may allow:
// its burst, then one per interval.
func floodBound(lim ratelimit.Limit, d time.Duration) int {
	return lim.BurstOrN() + int(d/lim.Interval()) + 1
}

// TestDefaultLimitsRefuseARESTFlood: one user sending 50 requests of each
// kind within 2s is refused past the burst with 429 RATE_LIMITED and a
// Retry-After, with the limits `matchgate serve` starts with.
func TestDefaultLimitsRefuseARESTFlood(t *testing.T) {
	lim, clk := clockLimiter(t)
	e := newRESTEnv(t, Config{Limiter: lim, Limits: DefaultLimits})
	tok := mustToken(t, "mallory", nil)
	for _, c := range []struct {
		method, path, body string
		limit              ratelimit.Limit
		call               string
	}{
		{"POST", "/v1/queues/ranked/tickets", `{}`, DefaultLimits.JoinsPerUser, "join"},
		{"DELETE", "/v1/tickets/t-1", "", DefaultLimits.CancelsPerUser, "cancel"},
		{"POST", "/v1/matches/m-1/accept", "", DefaultLimits.AcceptsPerUser, "accept"},
		{"PUT", "/v1/tickets/t-1/heartbeat", "", DefaultLimits.HeartbeatsPerUser, "heartbeat"},
		{"GET", "/v1/tickets/t-1", "", DefaultLimits.ReadsPerUser, "ticket"},
	} {
		allowed, refused := 0, 0
		for range 50 {
			clk.Advance(40 * time.Millisecond) // 50 in 2s
			r := e.do(t, c.method, c.path, tok, c.body)
			switch {
			case r.status < 300:
				allowed++
			case r.status == 429 && r.errorCode() == "RATE_LIMITED" && r.header.Get("Retry-After") != "":
				refused++
			default:
				t.Fatalf("%s %s: %d %v %s", c.method, c.path, r.status, r.header, r.body)
			}
		}
		if allowed < c.limit.BurstOrN() || allowed > floodBound(c.limit, 2*time.Second) || allowed+refused != 50 {
			t.Errorf("%s %s flood: %d allowed, %d refused; want the burst %d and at most %d",
				c.method, c.path, allowed, refused, c.limit.BurstOrN(), floodBound(c.limit, 2*time.Second))
		}
		if n := e.mm.called(c.call); n != allowed {
			t.Errorf("%s reached the matchmaker %d times, %d allowed", c.call, n, allowed)
		}
		clk.Advance(time.Hour) // every budget whole again
	}
	// GET /v1/queues: per user with a token (the flood above used up
	// nothing of it), per address without.
	allowed := 0
	for range 50 {
		clk.Advance(40 * time.Millisecond)
		if r := e.do(t, "GET", "/v1/queues", tok, ""); r.status == 200 {
			allowed++
		}
	}
	if allowed > floodBound(DefaultLimits.ReadsPerUser, 2*time.Second) {
		t.Errorf("GET /v1/queues flood with a token: %d allowed", allowed)
	}
	if r := e.do(t, "GET", "/v1/queues", "", ""); r.status != 200 {
		t.Errorf("GET /v1/queues without a token after a user's flood: %d %s", r.status, r.body)
	}
	if v := metricValue(t, e.srv.gatherer, "matchgate_refusals_total", "reason", "cancel_user"); v == 0 {
		t.Error("refusals{cancel_user} not counted")
	}
}

// TestDefaultLimitsRefuseAWebSocketFlood: 50 joins and cancels within 2s on
// one socket: past the bursts each is answered RATE_LIMITED with a
// retryAfter, and the socket stays open.
func TestDefaultLimitsRefuseAWebSocketFlood(t *testing.T) {
	lim, clk := clockLimiter(t)
	// The socket's own message bucket is off: the shared limits are the test.
	env := startServer(t, Config{Limiter: lim, Limits: DefaultLimits, MessageRate: ratelimit.Limit{N: -1}})
	c := dial(t, env.wsURL(), mustToken(t, "mallory", nil))
	readFrame(t, c) // hello
	allowed := map[string]int{}
	for i := range 50 {
		clk.Advance(40 * time.Millisecond)
		typ, cmd := "join", map[string]any{"type": "join", "id": fmt.Sprint(i), "queue": "ranked"}
		if i%2 == 1 {
			typ, cmd = "cancel", map[string]any{"type": "cancel", "id": fmt.Sprint(i), "ticketId": "t-1"}
		}
		writeJSONFrame(t, c, cmd)
		f := readFrame(t, c)
		switch {
		case f.Type == "joined" || f.Type == "cancelled":
			allowed[typ]++
		case f.Type == "error" && f.Error.Code == "RATE_LIMITED" && f.Error.RetryAfter >= 1:
		default:
			t.Fatalf("frame %d (%s): %s", i, typ, f.raw)
		}
	}
	for typ, l := range map[string]ratelimit.Limit{"join": DefaultLimits.JoinsPerUser, "cancel": DefaultLimits.CancelsPerUser} {
		if allowed[typ] < l.BurstOrN() || allowed[typ] > floodBound(l, 2*time.Second) {
			t.Errorf("%d of 25 %ss allowed, want %d..%d", allowed[typ], typ, l.BurstOrN(), floodBound(l, 2*time.Second))
		}
	}
	writeJSONFrame(t, c, map[string]any{"type": "ping", "id": "end"})
	if f := readFrame(t, c); f.Type != "pong" {
		t.Fatalf("after the flood: %s", f.raw)
	}
}

// TestDefaultLimitsLetARealClientThrough: a player who joins, cancels and
// rejoins every 10s, heartbeats its ticket every 10s over REST and asks for
// its ticket and the queues now and then, for an hour, is never refused.
func TestDefaultLimitsLetARealClientThrough(t *testing.T) {
	lim, clk := clockLimiter(t)
	e := newRESTEnv(t, Config{Limiter: lim, Limits: DefaultLimits})
	tok := mustToken(t, "ada", nil)
	for i := range 360 {
		steps := [][3]string{
			{"POST", "/v1/queues/ranked/tickets", `{}`},
			{"PUT", "/v1/tickets/t-1/heartbeat", ""},
			{"GET", "/v1/tickets/t-1", ""},
			{"DELETE", "/v1/tickets/t-1", ""},
		}
		if i%6 == 0 { // once a minute: the queue list, and a match to accept
			steps = append(steps, [3]string{"GET", "/v1/queues", ""}, [3]string{"POST", "/v1/matches/m-1/accept", ""})
		}
		for _, s := range steps {
			if r := e.do(t, s[0], s[1], tok, s[2]); r.status >= 300 {
				t.Fatalf("round %d, %s %s: %d %s", i, s[0], s[1], r.status, r.body)
			}
			clk.Advance(time.Second)
		}
		clk.Advance(10*time.Second - time.Duration(len(steps))*time.Second)
	}
}
