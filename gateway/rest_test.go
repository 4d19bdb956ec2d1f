package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// restEnv serves the Handler through httptest (no Run).
type restEnv struct {
	srv *Server
	mm  *fakeMatchmaker
	url string
}

func newRESTEnv(t *testing.T, cfg Config) *restEnv {
	t.Helper()
	mm := &fakeMatchmaker{}
	if cfg.Matchmaker == nil {
		cfg.Matchmaker = mm
	}
	cfg.Subscriber = newFakeSubscriber()
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &restEnv{srv: srv, mm: mm, url: ts.URL}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorCode() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &b)
	return b.Error.Code
}

func (e *restEnv) do(t *testing.T, method, path, token string, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

func TestRESTRoutes(t *testing.T) {
	e := newRESTEnv(t, Config{})
	tok := mustToken(t, "alice", ptr(1600.0))

	r := e.do(t, "POST", "/v1/queues/ranked/tickets", tok, `{"region":"eu","attributes":{"mode":"duo"}}`)
	if r.status != http.StatusAccepted || !bytes.Contains(r.body, []byte(`"ticket":{"id":"t-1"`)) {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	if req := e.mm.lastReq; req.Queue != "ranked" || req.UserID != "alice" || *req.Skill != 1600 || req.Attributes["mode"] != "duo" {
		t.Fatalf("JoinRequest = %+v", req)
	}
	if r.header.Get("X-Request-Id") == "" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers = %v", r.header)
	}
	// An empty body is an empty request.
	if r := e.do(t, "POST", "/v1/queues/ranked/tickets", tok, ""); r.status != http.StatusAccepted {
		t.Fatalf("join without body: %d %s", r.status, r.body)
	}
	r = e.do(t, "GET", "/v1/tickets/t-1", tok, "")
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"match":null`)) || !bytes.Contains(r.body, []byte(`"ticket":{"id":"t-1"`)) {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	r = e.do(t, "DELETE", "/v1/tickets/t-1", tok, "")
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"status":"CANCELLED"`)) {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if r := e.do(t, "PUT", "/v1/tickets/t-1/heartbeat", tok, ""); r.status != http.StatusNoContent {
		t.Fatalf("heartbeat: %d %s", r.status, r.body)
	}
	if r := e.do(t, "POST", "/v1/matches/m-1/accept", tok, ""); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"match":{"id":"m-1"`)) {
		t.Fatalf("accept: %d %s", r.status, r.body)
	}
	if r := e.do(t, "POST", "/v1/matches/m-1/decline", tok, ""); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"state":"DISSOLVED"`)) {
		t.Fatalf("decline: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/v1/queues", "", ""); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"queues":[{"name":"ranked"`)) {
		t.Fatalf("queues: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/v1/nothing", tok, ""); r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" {
		t.Fatalf("unknown route: %d %s", r.status, r.body)
	}
	if r := e.do(t, "PATCH", "/v1/tickets/t-1", tok, ""); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("wrong method: %d %s", r.status, r.body)
	}
}

func TestRESTBadBodies(t *testing.T) {
	e := newRESTEnv(t, Config{MaxBodyBytes: 256})
	tok := mustToken(t, "alice", nil)
	for name, body := range map[string]string{
		"too large":       `{"region":"` + strings.Repeat("x", 300) + `"}`,
		"malformed":       `{"region":`,
		"wrong type":      `{"region":5}`,
		"trailing":        `{"region":"eu"} {"x":1}`,
		"too many attrs":  `{"attributes":{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":"","q":""}}`,
		"long attr value": `{"attributes":{"a":"` + strings.Repeat("v", 65) + `"}}`,
	} {
		r := e.do(t, "POST", "/v1/queues/ranked/tickets", tok, body)
		if r.status != http.StatusBadRequest || r.errorCode() != "BAD_REQUEST" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if e.mm.called("join") != 0 {
		t.Fatal("Join called with a bad body")
	}
}

func TestRESTErrorMapping(t *testing.T) {
	cases := []struct {
		err        error
		status     int
		code       string
		retryAfter string
		extra      string
	}{
		{matcher.Errorf(matcher.CodeBadRequest, "bad"), 400, "BAD_REQUEST", "", ""},
		{matcher.Errorf(matcher.CodeUnknownQueue, "no such queue"), 400, "UNKNOWN_QUEUE", "", ""},
		{matcher.Errorf(matcher.CodeUnauthorized, "no"), 401, "UNAUTHORIZED", "", ""},
		{matcher.Errorf(matcher.CodeForbidden, "banned"), 403, "FORBIDDEN", "", ""},
		{matcher.Errorf(matcher.CodeNotFound, "no such ticket"), 404, "NOT_FOUND", "", ""},
		{&matcher.Error{Code: matcher.CodeAlreadyQueued, Message: "queued", TicketID: "t-old"}, 409, "ALREADY_QUEUED", "", `"ticketId":"t-old"`},
		{&matcher.Error{Code: matcher.CodeAlreadyMatched, Message: "matched", MatchID: "m-won"}, 409, "ALREADY_MATCHED", "", `"matchId":"m-won"`},
		{matcher.Errorf(matcher.CodeAlreadyCancelled, "cancelled"), 409, "ALREADY_CANCELLED", "", ""},
		{matcher.Errorf(matcher.CodeRateLimited, "slow down"), 429, "RATE_LIMITED", "1", ""},
		{matcher.Errorf(matcher.CodeCooldown, "declined recently"), 429, "COOLDOWN", "1", ""},
		{retryAfterError{matcher.Errorf(matcher.CodeCooldown, "declined recently"), 2500 * time.Millisecond}, 429, "COOLDOWN", "3", ""},
		{matcher.Errorf(matcher.CodeUnavailable, "later"), 503, "UNAVAILABLE", "1", ""},
		{context.DeadlineExceeded, 503, "UNAVAILABLE", "1", ""},
		{matcher.Errorf(matcher.CodeInternal, "secret detail"), 500, "INTERNAL", "", ""},
		{errors.New("pgx: secret detail"), 500, "INTERNAL", "", ""},
		{&matcher.Error{Code: matcher.Code(200), Message: "secret detail"}, 500, "INTERNAL", "", ""},
	}
	var current error
	e := newRESTEnv(t, Config{})
	e.mm.join = func(context.Context, matcher.JoinRequest) (matcher.Ticket, error) { return matcher.Ticket{}, current }
	tok := mustToken(t, "alice", nil)
	for _, c := range cases {
		current = c.err
		r := e.do(t, "POST", "/v1/queues/q/tickets", tok, `{}`)
		if r.status != c.status || r.errorCode() != c.code || r.header.Get("Retry-After") != c.retryAfter {
			t.Errorf("%v: %d %s Retry-After=%q, want %d %s %q", c.err, r.status, r.body, r.header.Get("Retry-After"), c.status, c.code, c.retryAfter)
		}
		if c.extra != "" && !bytes.Contains(r.body, []byte(c.extra)) {
			t.Errorf("%v: body %s lacks %s", c.err, r.body, c.extra)
		}
		if bytes.Contains(r.body, []byte("secret")) {
			t.Errorf("%v: internal detail leaked: %s", c.err, r.body)
		}
		if !bytes.Contains(r.body, []byte(`"message":`)) {
			t.Errorf("%v: no message: %s", c.err, r.body)
		}
	}
}

// retryAfterError wraps a domain error with a retry hint, as a rate limiter
// would.
type retryAfterError struct {
	err *matcher.Error
	d   time.Duration
}

func (e retryAfterError) Error() string             { return e.err.Error() }
func (e retryAfterError) RetryAfter() time.Duration { return e.d }
func (e retryAfterError) Unwrap() error             { return e.err }

func TestOtherUsersTicketIsNotFound(t *testing.T) {
	e := newRESTEnv(t, Config{})
	e.mm.ticket = func(_ context.Context, userID, ticketID string) (matcher.TicketView, error) {
		if userID != "owner" {
			return matcher.TicketView{}, matcher.Errorf(matcher.CodeNotFound, "no such ticket")
		}
		return matcher.TicketView{Ticket: matcher.Ticket{ID: ticketID, UserID: userID}}, nil
	}
	if r := e.do(t, "GET", "/v1/tickets/t-1", mustToken(t, "owner", nil), ""); r.status != http.StatusOK {
		t.Fatalf("owner: %d %s", r.status, r.body)
	}
	if r := e.do(t, "GET", "/v1/tickets/t-1", mustToken(t, "intruder", nil), ""); r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" {
		t.Fatalf("intruder: %d %s", r.status, r.body)
	}
}

func TestHealthReadyMetricsStatic(t *testing.T) {
	var ready error
	e := newRESTEnv(t, Config{Ready: func(context.Context) error { return ready }})
	if r := e.do(t, "GET", "/healthz", "", ""); r.status != 200 || string(r.body) != "ok\n" {
		t.Fatalf("healthz: %d %q", r.status, r.body)
	}
	if r := e.do(t, "GET", "/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	ready = errors.New("redis down")
	if r := e.do(t, "GET", "/readyz", "", ""); r.status != 503 || bytes.Contains(r.body, []byte("redis")) {
		t.Fatalf("readyz with failing dependency: %d %s", r.status, r.body)
	}
	ready = nil
	e.srv.mu.Lock()
	e.srv.draining = true
	e.srv.mu.Unlock()
	if r := e.do(t, "GET", "/readyz", "", ""); r.status != 503 {
		t.Fatalf("readyz while draining: %d %s", r.status, r.body)
	}
	r := e.do(t, "GET", "/metrics", "", "")
	for _, name := range []string{"matchgate_ws_connections ", "matchgate_http_requests_total{code=\"2xx\",method=\"GET\",route=\"/healthz\"} 1", "matchgate_ws_messages_sent_total{type=\"hello\"} 0"} {
		if !bytes.Contains(r.body, []byte(name)) {
			t.Errorf("metrics lack %q", name)
		}
	}
	r = e.do(t, "GET", "/", "", "")
	if r.status != 200 || !bytes.Contains(r.body, []byte("<html")) || r.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("static: %d %v %.80s", r.status, r.header, r.body)
	}
	if r := e.do(t, "GET", "/app.js", "", ""); r.status != 200 {
		t.Fatalf("app.js: %d", r.status)
	}
}

// GET /v1/tickets passes the cursor and the limit on and answers the page;
// a hello says more resolved tickets exist and where they start.
func TestTicketHistoryRouteAndHelloCursor(t *testing.T) {
	env := startServer(t, Config{})
	var gotBefore string
	var gotLimit int
	env.mm.history = func(_ context.Context, userID, before string, limit int) (matcher.UserState, error) {
		gotBefore, gotLimit = before, limit
		return matcher.UserState{Tickets: []matcher.Ticket{{ID: "t-9", UserID: userID, Status: matcher.StatusCancelled}},
			Matches: []matcher.Match{}, More: true, Next: "cursor-2"}, nil
	}
	env.mm.userState = func(context.Context, string) (matcher.UserState, error) {
		return matcher.UserState{Tickets: []matcher.Ticket{}, Matches: []matcher.Match{}, More: true, Next: "cursor-1"}, nil
	}
	tok := mustToken(t, "ada", nil)
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	r := e.do(t, "GET", "/v1/tickets?before=cursor-1&limit=5", tok, "")
	var page struct {
		Tickets []matcher.Ticket `json:"tickets"`
		More    bool             `json:"more"`
		Next    string           `json:"next"`
	}
	if err := json.Unmarshal(r.body, &page); r.status != 200 || err != nil || len(page.Tickets) != 1 || !page.More || page.Next != "cursor-2" {
		t.Fatalf("GET /v1/tickets: %d %s", r.status, r.body)
	}
	if gotBefore != "cursor-1" || gotLimit != 5 {
		t.Fatalf("TicketHistory(%q, %d)", gotBefore, gotLimit)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x"} {
		if r := e.do(t, "GET", "/v1/tickets?"+q, tok, ""); r.status != 400 || r.errorCode() != "BAD_REQUEST" {
			t.Errorf("?%s: %d %s", q, r.status, r.body)
		}
	}
	if r := e.do(t, "GET", "/v1/tickets", "", ""); r.status != 401 {
		t.Errorf("without a token: %d", r.status)
	}
	c := dial(t, env.wsURL(), tok)
	if f := readFrame(t, c); f.Type != "hello" || !f.More || f.Next != "cursor-1" {
		t.Fatalf("hello = %s", f.raw)
	}
}
