package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
	"github.com/matchgate/matchgate/provider"
)

// providerCall is one call a fakeProviders received.
type providerCall struct {
	op, queue, user, session string
	users                    []string
	capacity                 int
	attrs                    *provider.Attributes
}

// fakeProviders is an in-memory Providers: it remembers who is online and
// by which session, as the live pool does, and records every call.
type fakeProviders struct {
	ttl time.Duration

	mu     sync.Mutex
	calls  []providerCall
	online map[string]provider.Provider // by queue + "/" + user
	held   map[string]string            // session by queue + "/" + user
	states func(userID string) ([]provider.State, error)
}

func newFakeProviders(ttl time.Duration) *fakeProviders {
	return &fakeProviders{ttl: ttl, online: map[string]provider.Provider{}, held: map[string]string{}}
}

func (f *fakeProviders) record(c providerCall) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

// callsOf returns the calls of op.
func (f *fakeProviders) callsOf(op string) []providerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []providerCall
	for _, c := range f.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeProviders) ProviderOnline(ctx context.Context, queue, userID, session string, capacity int, attrs provider.Attributes) (provider.Provider, error) {
	f.record(providerCall{op: "online", queue: queue, user: userID, session: session, capacity: capacity, attrs: &attrs})
	if queue == "nope" {
		return provider.Provider{}, matcher.Errorf(matcher.CodeUnknownQueue, "no such queue")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := provider.Provider{UserID: userID, Queue: queue, Capacity: capacity, Attributes: attrs, Online: true, LastSeen: time.Unix(1e9, 0)}
	f.online[queue+"/"+userID], f.held[queue+"/"+userID] = p, session
	return p, nil
}

func (f *fakeProviders) ProviderUpdate(ctx context.Context, queue, userID string, capacity int, attrs *provider.Attributes) (provider.Provider, error) {
	f.record(providerCall{op: "update", queue: queue, user: userID, capacity: capacity, attrs: attrs})
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.online[queue+"/"+userID]
	if !ok || !p.Online {
		return provider.Provider{}, matcher.Errorf(matcher.CodeBadRequest, "not online")
	}
	if capacity >= 0 {
		p.Capacity = capacity
	}
	if attrs != nil {
		p.Attributes = *attrs
	}
	f.online[queue+"/"+userID] = p
	return p, nil
}

func (f *fakeProviders) ProviderOffline(ctx context.Context, queue, userID, session string) (bool, error) {
	f.record(providerCall{op: "offline", queue: queue, user: userID, session: session})
	f.mu.Lock()
	defer f.mu.Unlock()
	k := queue + "/" + userID
	p, ok := f.online[k]
	if !ok || !p.Online || (session != "" && f.held[k] != session) {
		return false, nil
	}
	p.Online = false
	f.online[k] = p
	return true, nil
}

func (f *fakeProviders) ProviderRefresh(ctx context.Context, queue string, userIDs []string, session string) error {
	f.record(providerCall{op: "refresh", queue: queue, users: slices.Clone(userIDs), session: session})
	return nil
}

func (f *fakeProviders) ProviderTTL() time.Duration { return f.ttl }

func (f *fakeProviders) ProviderStates(ctx context.Context, userID string) ([]provider.State, error) {
	f.record(providerCall{op: "states", user: userID})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.states != nil {
		return f.states(userID)
	}
	out := []provider.State{}
	for _, q := range []string{"advice"} {
		p, ok := f.online[q+"/"+userID]
		out = append(out, provider.State{Queue: q, Provider: p, Known: ok})
	}
	return out, nil
}

func (f *fakeProviders) ProviderPresence(ctx context.Context, queue string) (provider.Presence, error) {
	f.record(providerCall{op: "presence", queue: queue})
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := provider.Presence{Queue: queue}
	for _, p := range f.online {
		if p.Queue != queue {
			continue
		}
		if p.Online {
			pr.Online = append(pr.Online, p)
			pr.Capacity += p.Capacity
		} else {
			pr.Offline = append(pr.Offline, p)
		}
	}
	return pr, nil
}

func (f *fakeProviders) OperatorEnd(ctx context.Context, assignmentID string) (provider.Assignment, error) {
	f.record(providerCall{op: "operator_end", queue: assignmentID})
	return provider.Assignment{ID: assignmentID, Queue: "advice", Provider: "pro", Requester: "req", TicketID: "t1",
		Status: provider.StatusEnded, EndReason: "operator", EndedAt: time.Unix(1e9, 0), Version: 4}, nil
}

func (f *fakeProviders) EndAssignment(ctx context.Context, userID, assignmentID string) (provider.Assignment, error) {
	f.record(providerCall{op: "end", user: userID, queue: assignmentID})
	if assignmentID == "gone" {
		return provider.Assignment{}, matcher.Errorf(matcher.CodeNotFound, "no such assignment")
	}
	return provider.Assignment{ID: assignmentID, Queue: "advice", Provider: userID, Requester: "req", TicketID: "t1",
		Status: provider.StatusEnded, EndReason: "ended", EndedAt: time.Unix(1e9, 0), Version: 3}, nil
}

func providerToken(t testing.TB, sub string) string {
	t.Helper()
	tok, err := SignToken(testSecret, TokenSpec{Subject: sub, TTL: time.Hour, Role: RoleProvider})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// providerFrame is a provider frame as a client reads it.
type providerFrame struct {
	Type       string                   `json:"type"`
	Re         string                   `json:"re"`
	Provider   *protocol.ProviderView   `json:"provider"`
	Assignment *protocol.AssignmentView `json:"assignment"`
	Providers  []protocol.ProviderView  `json:"providers"`
	Error      *protocol.WireError      `json:"error"`
}

func readProviderFrame(t *testing.T, c *websocket.Conn) providerFrame {
	t.Helper()
	f := readFrame(t, c)
	var pf providerFrame
	if err := json.Unmarshal(f.raw, &pf); err != nil {
		t.Fatalf("%s: %v", f.raw, err)
	}
	return pf
}

// send writes a frame and reads its answer.
func send(t *testing.T, c *websocket.Conn, frame string) providerFrame {
	t.Helper()
	writeText(t, c, []byte(frame))
	return readProviderFrame(t, c)
}

func TestTokenRole(t *testing.T) {
	env := newRESTEnv(t, Config{})
	for _, c := range []struct {
		role     string
		provider bool
	}{{"", false}, {RolePlayer, false}, {RoleProvider, true}} {
		tok, err := SignToken(testSecret, TokenSpec{Subject: "u", TTL: time.Hour, Role: c.role})
		if err != nil {
			t.Fatal(err)
		}
		p, err := env.srv.parseToken(tok)
		if err != nil || p.Provider != c.provider {
			t.Errorf("role %q: %+v %v", c.role, p, err)
		}
	}
	if _, err := SignToken(testSecret, TokenSpec{Subject: "u", TTL: time.Hour, Role: "admin"}); err == nil {
		t.Error("signed a token with role admin")
	}
	// A token minted elsewhere with another role is refused at parse.
	for _, role := range []any{"admin", "Provider", 1} {
		tok := signClaims(t, jwt.SigningMethodHS256, testSecret, nil, jwt.MapClaims{"sub": "u", "exp": time.Now().Add(time.Hour).Unix(), "role": role})
		if _, err := env.srv.parseToken(tok); err == nil {
			t.Errorf("role %v was accepted", role)
		}
	}
}

func TestProvidersDisabled(t *testing.T) {
	env := startServer(t, Config{})
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	tok := providerToken(t, "pro")
	for _, rq := range [][2]string{
		{"GET", "/v1/providers/me/advice"}, {"PUT", "/v1/providers/me/advice"}, {"PATCH", "/v1/providers/me/advice"},
		{"DELETE", "/v1/providers/me/advice"}, {"POST", "/v1/assignments/a1/accept"}, {"POST", "/v1/assignments/a1/decline"},
		{"POST", "/v1/assignments/a1/end"}, {"GET", "/v1/presence/providers?queue=advice"},
	} {
		r := e.do(t, rq[0], rq[1], tok, `{"capacity":1}`)
		if r.status != http.StatusNotFound || !strings.Contains(string(r.body), "provider queues are not enabled") {
			t.Errorf("%s %s: %d %s", rq[0], rq[1], r.status, r.body)
		}
	}
	c := dial(t, env.wsURL(), tok)
	if f := readProviderFrame(t, c); f.Type != "hello" || f.Providers != nil {
		t.Fatalf("hello: %+v", f)
	}
	if f := send(t, c, `{"type":"provider.online","id":"1","queue":"advice","capacity":1}`); f.Error == nil || f.Error.Code != "NOT_FOUND" {
		t.Fatalf("%+v", f)
	}
}

func TestProviderFramesNeedProviderRole(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	env := startServer(t, Config{Providers: prov})
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	player := mustToken(t, "ada", nil)
	c := dial(t, env.wsURL(), player)
	if f := readProviderFrame(t, c); f.Type != "hello" || f.Providers != nil {
		t.Fatalf("a player's hello: %+v", f)
	}
	for _, fr := range []string{
		`{"type":"provider.online","id":"x","queue":"advice","capacity":1}`,
		`{"type":"provider.update","id":"x","queue":"advice","capacity":1}`,
		`{"type":"provider.offline","id":"x","queue":"advice"}`,
		`{"type":"assignment.accept","id":"x","assignmentId":"m1"}`,
		`{"type":"assignment.decline","id":"x","assignmentId":"m1"}`,
		`{"type":"assignment.end","id":"x","assignmentId":"m1"}`,
	} {
		f := send(t, c, fr)
		if f.Type != "error" || f.Re != "x" || f.Error.Code != "FORBIDDEN" || !strings.Contains(f.Error.Message, "provider token") {
			t.Errorf("%s: %+v", fr, f)
		}
	}
	for _, rq := range [][2]string{
		{"GET", "/v1/providers/me/advice"}, {"PUT", "/v1/providers/me/advice"}, {"PATCH", "/v1/providers/me/advice"},
		{"DELETE", "/v1/providers/me/advice"}, {"POST", "/v1/assignments/m1/accept"}, {"POST", "/v1/assignments/m1/decline"},
		{"POST", "/v1/assignments/m1/end"},
	} {
		body := `{"capacity":1}`
		if rq[0] == "POST" || rq[0] == "GET" || rq[0] == "DELETE" {
			body = ""
		}
		if r := e.do(t, rq[0], rq[1], player, body); r.status != http.StatusForbidden || r.errorCode() != "FORBIDDEN" {
			t.Errorf("%s %s: %d %s", rq[0], rq[1], r.status, r.body)
		}
	}
	// The presence is anyone's to read.
	if r := e.do(t, "GET", "/v1/presence/providers?queue=advice", player, ""); r.status != http.StatusOK {
		t.Errorf("presence: %d %s", r.status, r.body)
	}
	if n := len(prov.callsOf("online")) + len(prov.callsOf("offline")) + len(prov.callsOf("end")) + env.mm.called("accept"); n != 0 {
		t.Errorf("%d calls got through", n)
	}
}

func TestProviderWebSocket(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	env := startServer(t, Config{Providers: prov})
	var acceptUser atomic.Value
	by := time.Unix(2e9, 0)
	env.mm.accept = func(_ context.Context, userID, id string) (matcher.Match, error) {
		acceptUser.Store(userID)
		return matcher.Match{ID: id, Queue: "advice", State: matcher.MatchReady, AcceptBy: &by, Version: 2,
			Players: []matcher.Player{{TicketID: "t1", UserID: "req"}}}, nil
	}
	c := dial(t, env.wsURL(), providerToken(t, "pro"))
	hello := readProviderFrame(t, c)
	if hello.Type != "hello" || len(hello.Providers) != 1 || hello.Providers[0].Queue != "advice" || hello.Providers[0].Online {
		t.Fatalf("hello: %+v", hello)
	}

	f := send(t, c, `{"type":"provider.online","id":"1","queue":"advice","capacity":2,"attributes":{"languages":["en"],"specialties":["tax","law"],"sessionTypes":["video"],"rating":4.5}}`)
	want := provider.Attributes{Languages: []string{"en"}, Specialties: []string{"tax", "law"}, SessionTypes: []string{"video"}, Rating: 4.5}
	if f.Type != "provider" || f.Re != "1" || f.Provider == nil || !f.Provider.Online || f.Provider.Capacity != 2 ||
		f.Provider.UserID != "pro" || !reflect.DeepEqual(f.Provider.Attributes, want) {
		t.Fatalf("online: %+v", f)
	}
	on := prov.callsOf("online")
	if len(on) != 1 || on[0].user != "pro" || on[0].capacity != 2 || !strings.HasPrefix(on[0].session, "node-test/") ||
		!reflect.DeepEqual(*on[0].attrs, want) {
		t.Fatalf("ProviderOnline: %+v", on)
	}
	session := on[0].session

	f = send(t, c, `{"type":"provider.update","id":"2","queue":"advice","capacity":5}`)
	if f.Type != "provider" || f.Re != "2" || f.Provider.Capacity != 5 || !reflect.DeepEqual(f.Provider.Attributes, want) {
		t.Fatalf("update: %+v", f)
	}
	if up := prov.callsOf("update"); len(up) != 1 || up[0].capacity != 5 || up[0].attrs != nil {
		t.Fatalf("ProviderUpdate: %+v", up)
	}
	f = send(t, c, `{"type":"provider.update","id":"3","queue":"advice","attributes":{"rating":3}}`)
	if up := prov.callsOf("update"); len(up) != 2 || up[1].capacity != -1 || up[1].attrs == nil || up[1].attrs.Rating != 3 {
		t.Fatalf("ProviderUpdate: %+v %+v", up, f)
	}

	f = send(t, c, `{"type":"assignment.accept","id":"4","assignmentId":"m1"}`)
	if f.Type != "assignment" || f.Re != "4" || f.Assignment.ID != "m1" || f.Assignment.Status != provider.StatusAccepted ||
		f.Assignment.Requester.UserID != "req" || f.Assignment.Version != 2 || acceptUser.Load() != "pro" {
		t.Fatalf("accept: %+v", f)
	}
	f = send(t, c, `{"type":"assignment.decline","id":"5","assignmentId":"m2"}`)
	if f.Type != "assignment" || f.Assignment.ID != "m2" || f.Assignment.Status != provider.StatusDeclined || env.mm.called("decline") != 1 {
		t.Fatalf("decline: %+v", f)
	}
	f = send(t, c, `{"type":"assignment.end","id":"6","assignmentId":"m1"}`)
	if f.Type != "assignment" || f.Assignment.Status != provider.StatusEnded || f.Assignment.EndReason != "ended" || f.Assignment.EndedAt == nil {
		t.Fatalf("end: %+v", f)
	}
	f = send(t, c, `{"type":"assignment.end","id":"7","assignmentId":"gone"}`)
	if f.Type != "error" || f.Error.Code != "NOT_FOUND" {
		t.Fatalf("end of a gone one: %+v", f)
	}

	f = send(t, c, `{"type":"provider.offline","id":"8","queue":"advice"}`)
	if f.Type != "provider" || f.Re != "8" || f.Provider.Online || f.Provider.Capacity != 5 {
		t.Fatalf("offline: %+v", f)
	}
	// The socket no longer holds the queue: its close takes nothing offline.
	_ = c.Close(websocket.StatusNormalClosure, "")
	eventually(t, 5*time.Second, "socket gone", func() bool { return env.srv.sessionCount() == 0 })
	if off := prov.callsOf("offline"); len(off) != 1 || off[0].session != "" {
		t.Fatalf("offline calls: %+v (session %s)", off, session)
	}
}

func TestProviderFrameRefusals(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	env := startServer(t, Config{Providers: prov})
	c := dial(t, env.wsURL(), providerToken(t, "pro"))
	readProviderFrame(t, c)
	for _, fr := range []struct{ frame, code, msg string }{
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":1,"extra":1}`, "BAD_REQUEST", `unknown field "extra"`},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":1,"attributes":{"langs":["en"]}}`, "BAD_REQUEST", `attributes: malformed JSON: unknown field "langs"`},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":1,"attributes":{"rating":1,"rating":2}}`, "BAD_REQUEST", "given twice"},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":1,"assignmentId":"m"}`, "BAD_REQUEST", `"assignmentId" is not part of`},
		{`{"type":"provider.offline","id":"r","queue":"advice","capacity":1}`, "BAD_REQUEST", `"capacity" is not part of`},
		{`{"type":"assignment.accept","id":"r","assignmentId":"m","queue":"advice"}`, "BAD_REQUEST", `"queue" is not part of`},
		{`{"type":"provider.online","id":"r","queue":"advice"}`, "BAD_REQUEST", "capacity is required"},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":-1}`, "BAD_REQUEST", "capacity must be"},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":1001}`, "BAD_REQUEST", "capacity must be"},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":"2"}`, "BAD_REQUEST", "malformed JSON"},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":1,"attributes":{"rating":6}}`, "BAD_REQUEST", "rating must be"},
		{`{"type":"provider.online","id":"r","queue":"advice","capacity":1,"attributes":{"languages":[""]}}`, "BAD_REQUEST", "attributes.languages"},
		{`{"type":"provider.online","id":"r","capacity":1}`, "BAD_REQUEST", "queue is required"},
		{`{"type":"provider.online","id":"r","queue":"Advice!","capacity":1}`, "UNKNOWN_QUEUE", "no such provider queue"},
		{`{"type":"provider.online","id":"r","queue":"nope","capacity":1}`, "UNKNOWN_QUEUE", "no such queue"},
		{`{"type":"provider.update","id":"r","queue":"advice"}`, "BAD_REQUEST", "not online"},
		{`{"type":"assignment.accept","id":"r"}`, "BAD_REQUEST", "assignmentId is required"},
		{`{"type":"assignment.end","id":"r","assignmentId":"no/such"}`, "NOT_FOUND", "no such assignment"},
	} {
		f := send(t, c, fr.frame)
		if f.Type != "error" || f.Re != "r" || string(f.Error.Code) != fr.code || !strings.Contains(f.Error.Message, fr.msg) {
			t.Errorf("%s: %+v %+v", fr.frame, f, f.Error)
		}
	}
	if on := prov.callsOf("online"); len(on) != 1 || on[0].queue != "nope" {
		t.Errorf("refused frames reached the service: %+v", on)
	}
}

func TestProviderHelloFailureIsNotFatal(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	prov.states = func(string) ([]provider.State, error) { return nil, errors.New("redis down") }
	env := startServer(t, Config{Providers: prov})
	c := dial(t, env.wsURL(), providerToken(t, "pro"))
	if f := readProviderFrame(t, c); f.Type != "hello" || f.Providers != nil {
		t.Fatalf("hello: %+v", f)
	}
	if f := send(t, c, `{"type":"ping","id":"p"}`); f.Type != "pong" {
		t.Fatalf("%+v", f)
	}
	// A player's hello never reads the provider states.
	c2 := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	readProviderFrame(t, c2)
	if n := len(prov.callsOf("states")); n != 1 {
		t.Errorf("ProviderStates called %d times", n)
	}
}

// A socket's close takes its providers offline with its own session id
// once the grace has passed, not before; one that reconnected elsewhere
// meanwhile stays online.
func TestProviderCloseGoesOffline(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	const grace = 300 * time.Millisecond
	env := startServer(t, Config{Providers: prov, ProviderGrace: grace})
	c1 := dial(t, env.wsURL(), providerToken(t, "pro"))
	readProviderFrame(t, c1)
	send(t, c1, `{"type":"provider.online","id":"1","queue":"advice","capacity":1}`)
	send(t, c1, `{"type":"provider.online","id":"2","queue":"tutoring","capacity":1}`)
	s1 := prov.callsOf("online")[0].session

	closed := time.Now()
	_ = c1.Close(websocket.StatusNormalClosure, "")
	eventually(t, 5*time.Second, "offline at close", func() bool { return len(prov.callsOf("offline")) == 2 })
	if waited := time.Since(closed); waited < grace {
		t.Fatalf("offline %v after the close, within the grace of %v", waited, grace)
	}
	off := prov.callsOf("offline")
	if off[0].session != s1 || off[1].session != s1 || off[0].user != "pro" || off[0].queue != "advice" || off[1].queue != "tutoring" {
		t.Fatalf("offline calls: %+v", off)
	}

	// Reconnected on a second socket before the first one's close: the
	// guarded offline leaves it online.
	c2 := dial(t, env.wsURL(), providerToken(t, "pro"))
	readProviderFrame(t, c2)
	send(t, c2, `{"type":"provider.online","id":"1","queue":"advice","capacity":1}`)
	c3 := dial(t, env.wsURL(), providerToken(t, "pro"))
	readProviderFrame(t, c3)
	send(t, c3, `{"type":"provider.online","id":"1","queue":"advice","capacity":3}`)
	_ = c2.CloseNow() // an abrupt end counts as a client's
	eventually(t, 5*time.Second, "c2 closed", func() bool { return len(prov.callsOf("offline")) == 3 })
	prov.mu.Lock()
	p := prov.online["advice/pro"]
	prov.mu.Unlock()
	if !p.Online || p.Capacity != 3 {
		t.Fatalf("the reconnected provider went offline: %+v", p)
	}
}

// A drain takes no provider offline: they reconnect elsewhere.
func TestProviderDrainKeepsOnline(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	env := startServer(t, Config{Providers: prov})
	c := dial(t, env.wsURL(), providerToken(t, "pro"))
	readProviderFrame(t, c)
	send(t, c, `{"type":"provider.online","id":"1","queue":"advice","capacity":1}`)
	// Read while the server drains, so the close handshake completes.
	closed := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				closed <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	if err := env.stop(); err != nil {
		t.Fatal(err)
	}
	if code := <-closed; code != CloseGoingAway {
		t.Fatalf("close %d", code)
	}
	if off := prov.callsOf("offline"); len(off) != 0 {
		t.Fatalf("offline at drain: %+v", off)
	}
}

func TestProviderRefreshLoop(t *testing.T) {
	prov := newFakeProviders(60 * time.Millisecond)
	env := startServer(t, Config{Providers: prov})
	c := dial(t, env.wsURL(), providerToken(t, "pro"))
	readProviderFrame(t, c)
	// A player's socket holds nothing to refresh.
	p := dial(t, env.wsURL(), mustToken(t, "ada", nil))
	readProviderFrame(t, p)
	send(t, c, `{"type":"provider.online","id":"1","queue":"advice","capacity":1}`)
	session := prov.callsOf("online")[0].session
	eventually(t, 10*time.Second, "three refreshes", func() bool { return len(prov.callsOf("refresh")) >= 3 })
	for _, r := range prov.callsOf("refresh") {
		if r.queue != "advice" || r.session != session || !slices.Equal(r.users, []string{"pro"}) {
			t.Fatalf("refresh: %+v", r)
		}
	}
	send(t, c, `{"type":"provider.offline","id":"2","queue":"advice"}`)
	// Once offline, the socket refreshes nothing there. Every pass that
	// refreshes tutoring began after the offline (the online of tutoring
	// was answered after it), so from the first such call on, advice is
	// never named.
	send(t, c, `{"type":"provider.online","id":"3","queue":"tutoring","capacity":1}`)
	first := func() int {
		for i, r := range prov.callsOf("refresh") {
			if r.queue == "tutoring" {
				return i
			}
		}
		return -1
	}
	eventually(t, 10*time.Second, "refreshes of tutoring", func() bool {
		i := first()
		return i >= 0 && len(prov.callsOf("refresh")) >= i+3
	})
	for _, r := range prov.callsOf("refresh")[first():] {
		if r.queue != "tutoring" {
			t.Fatalf("refreshed %+v after its offline", r)
		}
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
	_ = p.Close(websocket.StatusNormalClosure, "")
	if err := env.stop(); err != nil {
		t.Fatal(err)
	}
	after := len(prov.callsOf("refresh"))
	time.Sleep(150 * time.Millisecond)
	if n := len(prov.callsOf("refresh")); n != after {
		t.Fatalf("refreshes went on after Run returned: %d then %d", after, n)
	}
}

// The refresh races sockets that open, hold, forget and close: every call
// names exactly the one user of the one socket it is for.
func TestProviderRefreshRace(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	env := newRESTEnv(t, Config{Providers: prov, ProviderGrace: time.Millisecond})
	srv := env.srv
	const sockets, rounds = 8, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var passes atomic.Int64
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			srv.refreshOnce(context.Background())
			passes.Add(1)
		}
	})
	var workers sync.WaitGroup
	for i := range sockets {
		workers.Go(func() {
			for r := range rounds {
				sess := &session{srv: srv, socketID: fmt.Sprintf("i/%d-%d", i, r), p: principal{UserID: fmt.Sprintf("u%d", i), Provider: true}}
				sess.prov = &sessionProviders{held: map[string]providerHold{}}
				srv.provSessions.mu.Lock()
				srv.provSessions.byID[sess] = struct{}{}
				srv.provSessions.mu.Unlock()
				sess.hold("advice", provider.Provider{Capacity: 1})
				if r%2 == 0 {
					sess.hold("tutoring", provider.Provider{Capacity: 1})
				}
				sess.prov.forget("advice")
				sess.providersClosed()
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	refreshes := prov.callsOf("refresh")
	for _, r := range refreshes {
		user, _, _ := strings.Cut(strings.TrimPrefix(r.session, srv.cfg.Node+"/i/"), "-")
		if len(r.users) != 1 || r.users[0] != "u"+user {
			t.Fatalf("refresh %+v", r)
		}
	}
	// Every close took offline, once its grace passed, what the socket
	// held at its end: tutoring in every other round, never advice
	// (forgotten before).
	srv.tasks.Wait()
	off := prov.callsOf("offline")
	if len(off) != sockets*rounds/2 {
		t.Fatalf("%d offline calls, want %d", len(off), sockets*rounds/2)
	}
	for _, o := range off {
		if o.queue != "tutoring" {
			t.Fatalf("offline %+v", o)
		}
	}
	if len(srv.provSessions.byID) != 0 {
		t.Fatalf("%d sessions left registered", len(srv.provSessions.byID))
	}
	t.Logf("%d passes, %d refreshes", passes.Load(), len(refreshes))
}

func TestProviderREST(t *testing.T) {
	prov := newFakeProviders(time.Hour)
	env := newRESTEnv(t, Config{Providers: prov})
	tok := providerToken(t, "pro")
	r := env.do(t, "GET", "/v1/providers/me/advice", tok, "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"online":false`) {
		t.Fatalf("get before: %d %s", r.status, r.body)
	}
	if r := env.do(t, "GET", "/v1/providers/me/other", tok, ""); r.status != http.StatusNotFound {
		t.Fatalf("get of another queue: %d %s", r.status, r.body)
	}
	r = env.do(t, "PUT", "/v1/providers/me/advice", tok, `{"capacity":2,"attributes":{"languages":["en"],"rating":4}}`)
	var body protocol.ProviderViewBody
	if err := json.Unmarshal(r.body, &body); r.status != http.StatusOK || err != nil || !body.Provider.Online || body.Provider.Capacity != 2 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	if on := prov.callsOf("online"); len(on) != 1 || on[0].session != "" || on[0].attrs.Languages[0] != "en" {
		t.Fatalf("online: %+v", on)
	}
	for _, bad := range []string{`{}`, `{"capacity":2,"x":1}`, `{"capacity":2,"attributes":{"x":1}}`, `{"capacity":2000}`} {
		if r := env.do(t, "PUT", "/v1/providers/me/advice", tok, bad); r.status != http.StatusBadRequest {
			t.Errorf("put %s: %d %s", bad, r.status, r.body)
		}
	}
	r = env.do(t, "PATCH", "/v1/providers/me/advice", tok, `{"capacity":4}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"capacity":4`) || !strings.Contains(string(r.body), `"languages":["en"]`) {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	r = env.do(t, "GET", "/v1/presence/providers?queue=advice", mustToken(t, "ada", nil), "")
	var pr protocol.PresenceBody
	if err := json.Unmarshal(r.body, &pr); r.status != http.StatusOK || err != nil || len(pr.Online) != 1 || pr.Capacity != 4 || pr.Busy == nil {
		t.Fatalf("presence: %d %s", r.status, r.body)
	}
	if r := env.do(t, "GET", "/v1/presence/providers", tok, ""); r.status != http.StatusBadRequest {
		t.Errorf("presence without a queue: %d %s", r.status, r.body)
	}
	r = env.do(t, "DELETE", "/v1/providers/me/advice", tok, "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"online":false`) {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if off := prov.callsOf("offline"); len(off) != 1 || off[0].session != "" {
		t.Fatalf("offline: %+v", off)
	}
	for _, a := range []struct{ path, status string }{{"accept", "ACCEPTED"}, {"decline", "DECLINED"}, {"end", "ENDED"}} {
		r := env.do(t, "POST", "/v1/assignments/m1/"+a.path, tok, "")
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"`+a.status+`"`) {
			t.Errorf("%s: %d %s", a.path, r.status, r.body)
		}
	}
	if r := env.do(t, "POST", "/v1/assignments/m1/accept", tok, `{"x":1}`); r.status != http.StatusBadRequest {
		t.Errorf("accept with a body: %d %s", r.status, r.body)
	}
	if r := env.do(t, "POST", "/v1/assignments/gone/end", tok, ""); r.status != http.StatusNotFound {
		t.Errorf("end of a gone one: %d %s", r.status, r.body)
	}
}

// FuzzDecodeProviderFrame: the provider frame decoder never panics,
// refuses only with BAD_REQUEST, and what it accepts is a bounded frame
// that survives a round trip.
func FuzzDecodeProviderFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"provider.online","id":"1","queue":"advice","capacity":2,"attributes":{"languages":["en"],"specialties":["tax"],"sessionTypes":["video"],"rating":4.5}}`,
		`{"type":"provider.update","id":"2","queue":"advice","attributes":{"languages":[]}}`,
		`{"type":"provider.offline","id":"3","queue":"advice"}`, `{"type":"assignment.accept","id":"4","assignmentId":"m"}`,
		`{"type":"assignment.decline","assignmentId":"m"}`, `{"type":"assignment.end","assignmentId":"m","queue":"q"}`,
		`{"type":"provider.online","attributes":{"rating":1,"rating":2}}`, `{"type":"provider.online","attributes":null}`,
		`{"type":"provider.online","attributes":{"x":[]}}`, `{"type":"provider.online","capacity":1e40}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := decodeClientFrame(data)
		if len(in.ID) > maxClientIDLen {
			t.Fatalf("an id of %d bytes came through", len(in.ID))
		}
		if err != nil {
			requireBadRequest(t, err)
			return
		}
		if in.prov == nil {
			return // FuzzDecodeFrame's
		}
		if foreignProviderField(*in.prov) != "" {
			t.Fatalf("accepted a foreign field: %+v", in.prov)
		}
		b, err := json.Marshal(in.prov)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeClientFrame(b)
		if err != nil || !reflect.DeepEqual(in, again) {
			t.Fatalf("round trip: %+v → %s → %+v, %v", in.prov, b, again.prov, err)
		}
	})
}

// A provider frame is told by its type wherever the type stands.
func TestDecodeClientFrameRoutesByType(t *testing.T) {
	for _, c := range []struct {
		frame string
		prov  bool
	}{
		{`{"type":"provider.offline","id":"1","queue":"advice"}`, true},
		{`{"id":"1","queue":"advice","type":"provider.offline"}`, true},
		{` {"type":"join","id":"1","queue":"duel"}`, false},
		{`{"queue":"duel","type":"join"}`, false},
	} {
		in, err := decodeClientFrame([]byte(c.frame))
		if err != nil || (in.prov != nil) != c.prov || in.Queue == "" && !c.prov || c.prov && in.prov.Queue != "advice" {
			t.Errorf("%s: %+v %v", c.frame, in, err)
		}
	}
	// A join's attributes are not a provider's, and the other way round.
	if _, err := decodeClientFrame([]byte(`{"type":"join","queue":"duel","attributes":{"languages":["en"]}}`)); err == nil {
		t.Error("a join took a provider's attributes")
	}
	if _, err := decodeClientFrame([]byte(`{"type":"provider.online","queue":"advice","capacity":1,"attributes":{"mode":"duo"}}`)); err == nil {
		t.Error("provider.online took a join's attributes")
	}
}
