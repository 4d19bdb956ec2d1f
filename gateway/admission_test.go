package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/ratelimit"
)

// fakeAdmissions is an in-memory Admissions with the service's rules: one
// live place per user and queue, a line in the order of entry, tokens
// READY → CLAIMED → CONSUMED (or back to READY), refusals wrapped in
// context as the service wraps them. Tests override its answers.
type fakeAdmissions struct {
	mu     sync.Mutex
	calls  []string
	queues map[string]bool
	line   map[string][]string          // queue → waiting users, in order
	ready  map[string]map[string]string // queue → user → token
	tokens map[string]*admission.Place  // token → place
	now    time.Time

	enter    func(ctx context.Context, queue, userID string) (admission.Position, bool, error)
	position func(ctx context.Context, queue, userID string) (admission.Position, error)
	leave    func(ctx context.Context, queue, userID string) error
	claim    func(ctx context.Context, queue, token string) (admission.Place, error)
	list     func(ctx context.Context) ([]admission.QueueStats, error)
}

func newFakeAdmissions(queues ...string) *fakeAdmissions {
	f := &fakeAdmissions{queues: map[string]bool{}, line: map[string][]string{}, ready: map[string]map[string]string{},
		tokens: map[string]*admission.Place{}, now: time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)}
	for _, q := range queues {
		f.queues[q] = true
		f.ready[q] = map[string]string{}
	}
	return f
}

// Queues lists the fake's queues, sorted, with their lines' lengths.
func (f *fakeAdmissions) Queues(ctx context.Context) ([]admission.QueueStats, error) {
	f.record("queues")
	if f.list != nil {
		return f.list(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []admission.QueueStats
	for q := range f.queues {
		out = append(out, admission.QueueStats{Queue: admission.Queue{Name: q, Rate: 5}, Waiting: int64(len(f.line[q]))})
	}
	slices.SortFunc(out, func(a, b admission.QueueStats) int { return strings.Compare(a.Queue.Name, b.Queue.Name) })
	return out, nil
}

func (f *fakeAdmissions) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeAdmissions) called(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

func (f *fakeAdmissions) known(queue string) error {
	if !f.queues[queue] {
		return fmt.Errorf("%w: %q", admission.ErrUnknownQueue, queue)
	}
	return nil
}

// admit moves the first waiter of queue to READY with token, expiring ttl
// from the fake's now (negative: expired already).
func (f *fakeAdmissions) admit(queue, token string, ttl time.Duration) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	user := f.line[queue][0]
	f.line[queue] = f.line[queue][1:]
	f.ready[queue][user] = token
	f.tokens[token] = &admission.Place{Queue: queue, UserID: user, Status: admission.StatusReady, Token: token,
		ExpiresAt: f.now.Add(ttl)}
	return user
}

// placeLocked is the user's position.
func (f *fakeAdmissions) placeLocked(queue, userID string) admission.Position {
	if tok, ok := f.ready[queue][userID]; ok {
		if p := f.tokens[tok]; p.ExpiresAt.After(f.now) && p.Status != admission.StatusConsumed {
			return admission.Position{Status: admission.StatusReady, Token: tok, ExpiresAt: p.ExpiresAt}
		}
	}
	for i, u := range f.line[queue] {
		if u == userID {
			n := len(f.line[queue])
			return admission.Position{Status: admission.StatusWaiting, Rank: int64(i), Total: int64(n),
				ETA:       admission.ETA{Seconds: float64(i+1) / 2, Low: float64(i+1) / 4, High: float64(i + 1)},
				PollAfter: time.Second}
		}
	}
	return admission.Position{}
}

func (f *fakeAdmissions) Enter(ctx context.Context, queue, userID string) (admission.Position, bool, error) {
	f.record("enter")
	if f.enter != nil {
		return f.enter(ctx, queue, userID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.known(queue); err != nil {
		return admission.Position{}, false, err
	}
	if p := f.placeLocked(queue, userID); p.Status != "" {
		return p, false, nil
	}
	f.line[queue] = append(f.line[queue], userID)
	return f.placeLocked(queue, userID), true, nil
}

func (f *fakeAdmissions) Position(ctx context.Context, queue, userID string) (admission.Position, error) {
	f.record("position")
	if f.position != nil {
		return f.position(ctx, queue, userID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.known(queue); err != nil {
		return admission.Position{}, err
	}
	return f.placeLocked(queue, userID), nil
}

func (f *fakeAdmissions) Leave(ctx context.Context, queue, userID string) error {
	f.record("leave")
	if f.leave != nil {
		return f.leave(ctx, queue, userID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.known(queue); err != nil {
		return err
	}
	for i, u := range f.line[queue] {
		if u == userID {
			f.line[queue] = append(f.line[queue][:i:i], f.line[queue][i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("leave %s: %w", queue, admission.ErrNotFound)
}

// token finds a live token of queue.
func (f *fakeAdmissions) tokenLocked(queue, token string) (*admission.Place, error) {
	if err := f.known(queue); err != nil {
		return nil, err
	}
	p, ok := f.tokens[token]
	if !ok || p.Queue != queue || !p.ExpiresAt.After(f.now) {
		return nil, admission.ErrNotFound
	}
	return p, nil
}

func (f *fakeAdmissions) Claim(ctx context.Context, queue, token string) (admission.Place, error) {
	f.record("claim")
	if f.claim != nil {
		return f.claim(ctx, queue, token)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.tokenLocked(queue, token)
	if err != nil {
		return admission.Place{}, err
	}
	if p.Status != admission.StatusReady {
		return admission.Place{}, fmt.Errorf("claim %s: %w", queue, admission.ErrAlreadyClaimed)
	}
	p.Status, p.ClaimedAt = admission.StatusClaimed, f.now
	return *p, nil
}

func (f *fakeAdmissions) Consume(ctx context.Context, queue, token string) (admission.Place, error) {
	return f.settle("consume", queue, token, admission.StatusConsumed)
}

func (f *fakeAdmissions) Release(ctx context.Context, queue, token string) (admission.Place, error) {
	return f.settle("release", queue, token, admission.StatusReady)
}

func (f *fakeAdmissions) settle(call, queue, token string, to admission.Status) (admission.Place, error) {
	f.record(call)
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.tokenLocked(queue, token)
	if err != nil {
		return admission.Place{}, err
	}
	if p.Status != admission.StatusClaimed {
		return admission.Place{}, fmt.Errorf("%s %s: %w", call, queue, admission.ErrNotClaimed)
	}
	p.Status = to
	if to == admission.StatusConsumed {
		p.ConsumedAt = f.now
	}
	return *p, nil
}

// admissionEnv is a running gateway with admission queues ("drop") and a
// service credential.
type admissionEnv struct {
	*testEnv
	adm *fakeAdmissions
	api *restEnv
}

func startAdmissionServer(t *testing.T, cfg Config) *admissionEnv {
	t.Helper()
	adm := newFakeAdmissions("drop")
	cfg.Admissions = adm
	if cfg.AdminTokens == nil {
		cfg.AdminTokens, cfg.Admin = []string{adminToken}, fakeAdminForValidation{}
	}
	env := startServer(t, cfg)
	return &admissionEnv{testEnv: env, adm: adm, api: &restEnv{srv: env.srv, mm: env.mm, url: env.base}}
}

// positionOf reads the place of a REST answer.
func positionOf(t *testing.T, r response) map[string]any {
	t.Helper()
	var b struct {
		Position map[string]any `json:"position"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.Position == nil {
		t.Fatalf("no position in %d %s", r.status, r.body)
	}
	return b.Position
}

func TestAdmissionsDisabled(t *testing.T) {
	env := startServer(t, Config{AdminTokens: []string{adminToken}, Admin: fakeAdminForValidation{}})
	e := &restEnv{srv: env.srv, mm: env.mm, url: env.base}
	tok := mustToken(t, "ada", nil)
	for _, rq := range [][3]string{
		{"POST", "/v1/admission/drop/enter", tok}, {"GET", "/v1/admission/drop/position", tok},
		{"DELETE", "/v1/admission/drop", tok}, {"GET", "/v1/admission/drop/position", ""},
		{"POST", "/v1/admission/drop/tokens/claim", adminToken}, {"POST", "/v1/admission/drop/tokens/consume", ""},
		{"POST", "/v1/admission/drop/tokens/release", tok},
	} {
		r := e.do(t, rq[0], rq[1], rq[2], `{"token":"ab"}`)
		if r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" || !strings.Contains(string(r.body), "admission queues are not enabled") {
			t.Errorf("%s %s: %d %s", rq[0], rq[1], r.status, r.body)
		}
	}
	c := dial(t, env.wsURL(), tok)
	readFrame(t, c)
	for _, typ := range []string{"enter", "position", "leave"} {
		writeJSONFrame(t, c, map[string]any{"type": typ, "id": typ, "queue": "drop"})
		if f := readFrame(t, c); f.Type != "error" || f.Re != typ || f.Error.Code != "NOT_FOUND" {
			t.Errorf("%s: %s", typ, f.raw)
		}
	}
}

func TestAdmissionREST(t *testing.T) {
	e := startAdmissionServer(t, Config{})
	ada, bob := mustToken(t, "ada", nil), mustToken(t, "bob", nil)

	r := e.api.do(t, "POST", "/v1/admission/drop/enter", ada, "")
	if r.status != http.StatusAccepted || r.header.Get("Content-Type") != "application/json" ||
		string(r.body) != `{"position":{"status":"WAITING","rank":0,"total":1,"eta":{"seconds":0.5,"low":0.3,"high":1},"pollAfter":1}}`+"\n" {
		t.Fatalf("first entry: %d %s", r.status, r.body)
	}
	r = e.api.do(t, "POST", "/v1/admission/drop/enter", bob, "{}")
	if p := positionOf(t, r); r.status != http.StatusAccepted || p["rank"] != 1.0 || p["total"] != 2.0 {
		t.Fatalf("bob's entry: %d %s", r.status, r.body)
	}
	// A repeat (a retry, a second tab) is 200 with the same place.
	r = e.api.do(t, "POST", "/v1/admission/drop/enter", bob, "")
	if p := positionOf(t, r); r.status != http.StatusOK || p["rank"] != 1.0 || p["total"] != 2.0 {
		t.Fatalf("bob again: %d %s", r.status, r.body)
	}
	if n := e.adm.called("enter"); n != 3 {
		t.Fatalf("Enter called %d times", n)
	}
	r = e.api.do(t, "GET", "/v1/admission/drop/position", bob, "")
	if p := positionOf(t, r); r.status != http.StatusOK || p["status"] != "WAITING" || p["rank"] != 1.0 {
		t.Fatalf("bob's position: %d %s", r.status, r.body)
	}
	if r := e.api.do(t, "GET", "/v1/admission/drop/position", mustToken(t, "carol", nil), ""); r.status != http.StatusOK ||
		string(r.body) != `{"position":{"status":"NOT_ENTERED"}}`+"\n" {
		t.Fatalf("carol, who never entered: %d %s", r.status, r.body)
	}

	// Admitted: READY with the token, and nothing of a waiter.
	e.adm.admit("drop", "0123456789abcdef0123456789abcdef", time.Minute)
	r = e.api.do(t, "GET", "/v1/admission/drop/position", ada, "")
	if r.status != http.StatusOK || string(r.body) !=
		`{"position":{"status":"READY","token":"0123456789abcdef0123456789abcdef","expiresAt":"2031-03-04T05:07:07.000Z"}}`+"\n" {
		t.Fatalf("ada admitted: %d %s", r.status, r.body)
	}

	r = e.api.do(t, "DELETE", "/v1/admission/drop", bob, "")
	if r.status != http.StatusOK || string(r.body) != `{"position":{"status":"NOT_ENTERED"}}`+"\n" {
		t.Fatalf("bob leaves: %d %s", r.status, r.body)
	}
	if r := e.api.do(t, "DELETE", "/v1/admission/drop", bob, ""); r.status != http.StatusNotFound || r.errorCode() != "NOT_FOUND" ||
		!strings.Contains(string(r.body), msgNoPlace) {
		t.Fatalf("bob leaves again: %d %s", r.status, r.body)
	}

	// An unknown queue is answered as a join to one is: by the service's
	// refusal, or before the service for a name no queue can have.
	for _, path := range []string{"/v1/admission/nope/enter", "/v1/admission/nope/position"} {
		method := map[bool]string{true: "POST", false: "GET"}[strings.HasSuffix(path, "enter")]
		if r := e.api.do(t, method, path, ada, ""); r.status != http.StatusBadRequest || r.errorCode() != "UNKNOWN_QUEUE" ||
			!strings.Contains(string(r.body), `"message":"no such admission queue"`) {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	if r := e.api.do(t, "DELETE", "/v1/admission/nope", ada, ""); r.status != http.StatusBadRequest || r.errorCode() != "UNKNOWN_QUEUE" {
		t.Errorf("leave an unknown queue: %d %s", r.status, r.body)
	}
	calls := e.adm.called("enter") + e.adm.called("position") + e.adm.called("leave")
	if r := e.api.do(t, "POST", "/v1/admission/Drop'--/enter", ada, ""); r.status != http.StatusBadRequest || r.errorCode() != "UNKNOWN_QUEUE" {
		t.Errorf("a name no queue has: %d %s", r.status, r.body)
	}
	for name, rq := range map[string][3]string{
		"no token":      {"POST", "/v1/admission/drop/enter", ""},
		"bad token":     {"GET", "/v1/admission/drop/position", "x.y.z"},
		"admin token":   {"DELETE", "/v1/admission/drop", adminToken},
		"unknown field": {"POST", "/v1/admission/drop/enter", ada},
	} {
		want := http.StatusUnauthorized
		if name == "unknown field" {
			want = http.StatusBadRequest
		}
		if r := e.api.do(t, rq[0], rq[1], rq[2], `{"queue":"drop"}`); r.status != want {
			t.Errorf("%s: %d %s, want %d", name, r.status, r.body, want)
		}
	}
	if n := e.adm.called("enter") + e.adm.called("position") + e.adm.called("leave"); n != calls {
		t.Errorf("refused requests reached the service: %d calls, %d before", n, calls)
	}

	// What the service fails with inside is not the client's to read.
	e.adm.position = func(context.Context, string, string) (admission.Position, error) {
		return admission.Position{}, fmt.Errorf("place in drop: %w", admission.ErrStaleEpoch)
	}
	if r := e.api.do(t, "GET", "/v1/admission/drop/position", ada, ""); r.status != http.StatusInternalServerError ||
		string(r.body) != `{"error":{"code":"INTERNAL","message":"internal error"}}`+"\n" {
		t.Errorf("internal: %d %s", r.status, r.body)
	}
	e.adm.position = func(ctx context.Context, _, _ string) (admission.Position, error) {
		return admission.Position{}, fmt.Errorf("rank in drop: %w", context.DeadlineExceeded)
	}
	if r := e.api.do(t, "GET", "/v1/admission/drop/position", ada, ""); r.status != http.StatusServiceUnavailable ||
		r.errorCode() != "UNAVAILABLE" || r.header.Get("Retry-After") == "" {
		t.Errorf("timed out: %d %s", r.status, r.body)
	}
}

// tokenResponse is the answer of a token route.
type tokenResponse struct {
	UserID    string  `json:"userId"`
	Status    string  `json:"status"`
	ClaimedAt *string `json:"claimedAt"`
	ExpiresAt string  `json:"expiresAt"`
}

func TestAdmissionTokens(t *testing.T) {
	e := startAdmissionServer(t, Config{})
	for _, u := range []string{"ada", "bob", "carol"} {
		if r := e.api.do(t, "POST", "/v1/admission/drop/enter", mustToken(t, u, nil), ""); r.status != http.StatusAccepted {
			t.Fatalf("%s enters: %d %s", u, r.status, r.body)
		}
	}
	const tokA, tokB, tokC = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccccccccccccccccc"
	e.adm.admit("drop", tokA, time.Minute)
	e.adm.admit("drop", tokB, time.Minute)
	e.adm.admit("drop", tokC, -time.Second) // its life ended
	call := func(op, token, credential string) (response, tokenResponse) {
		t.Helper()
		r := e.api.do(t, "POST", "/v1/admission/drop/tokens/"+op, credential, `{"token":"`+token+`"}`)
		var b tokenResponse
		if r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, &b); err != nil {
				t.Fatalf("%s: %s: %v", op, r.body, err)
			}
		}
		return r, b
	}
	wantError := func(what string, r response, status int, code string) {
		t.Helper()
		if r.status != status || r.errorCode() != code {
			t.Errorf("%s: %d %s, want %d %s", what, r.status, r.body, status, code)
		}
	}

	// The service credential only: a player token, even the token's own
	// user's, never claims.
	before := e.adm.called("claim")
	for name, cred := range map[string]string{
		"none": "", "player": mustToken(t, "ada", nil), "admin's prefix": adminToken[:len(adminToken)-1],
	} {
		for _, op := range []string{"claim", "consume", "release"} {
			r, _ := call(op, tokA, cred)
			wantError(name+" "+op, r, http.StatusUnauthorized, "UNAUTHORIZED")
		}
	}
	if n := e.adm.called("claim") + e.adm.called("consume") + e.adm.called("release"); n != before {
		t.Fatalf("refused credentials reached the service %d times", n-before)
	}

	r, b := call("claim", tokA, adminToken)
	if r.status != http.StatusOK || b.UserID != "ada" || b.Status != "CLAIMED" || b.ClaimedAt == nil ||
		*b.ClaimedAt != "2031-03-04T05:06:07.000Z" || b.ExpiresAt != "2031-03-04T05:07:07.000Z" {
		t.Fatalf("claim: %d %s", r.status, r.body)
	}
	r, _ = call("claim", tokA, adminToken)
	wantError("claim again", r, http.StatusConflict, "ALREADY_CLAIMED")
	r, _ = call("claim", strings.Repeat("d", 32), adminToken)
	wantError("claim an unknown token", r, http.StatusNotFound, "NOT_FOUND")
	if !strings.Contains(string(r.body), msgNoToken) {
		t.Errorf("unknown token: %s", r.body)
	}
	r, _ = call("claim", tokC, adminToken)
	wantError("claim an expired token", r, http.StatusNotFound, "NOT_FOUND")

	r, _ = call("consume", tokB, adminToken)
	wantError("consume a token not claimed", r, http.StatusConflict, "NOT_CLAIMED")
	r, _ = call("release", tokB, adminToken)
	wantError("release a token not claimed", r, http.StatusConflict, "NOT_CLAIMED")

	// Released: READY again, and claimable.
	if r, b := call("release", tokA, adminToken); r.status != http.StatusOK || b.Status != "READY" || b.ClaimedAt != nil || b.UserID != "ada" {
		t.Fatalf("release: %d %s", r.status, r.body)
	}
	if r, b := call("claim", tokA, adminToken); r.status != http.StatusOK || b.Status != "CLAIMED" {
		t.Fatalf("claim after the release: %d %s", r.status, r.body)
	}
	if r, b := call("consume", tokA, adminToken); r.status != http.StatusOK || b.Status != "CONSUMED" || b.ClaimedAt == nil {
		t.Fatalf("consume: %d %s", r.status, r.body)
	}
	// Consumed is final.
	r, _ = call("consume", tokA, adminToken)
	wantError("consume again", r, http.StatusConflict, "NOT_CLAIMED")
	r, _ = call("claim", tokA, adminToken)
	wantError("claim a consumed token", r, http.StatusConflict, "ALREADY_CLAIMED")

	// Bodies are strict, and a token that cannot be one is not looked up.
	before = e.adm.called("claim")
	for name, c := range map[string]struct {
		body   string
		status int
	}{
		"no body":       {"", http.StatusBadRequest},
		"empty token":   {`{"token":""}`, http.StatusBadRequest},
		"unknown field": {`{"token":"` + tokB + `","user":"ada"}`, http.StatusBadRequest},
		"twice":         {`{"token":"` + tokB + `","token":"` + tokA + `"}`, http.StatusBadRequest},
		"not a string":  {`{"token":1}`, http.StatusBadRequest},
		"not a token":   {`{"token":"' OR 1=1 --"}`, http.StatusNotFound},
		"too long":      {`{"token":"` + strings.Repeat("a", 65) + `"}`, http.StatusNotFound},
	} {
		if r := e.api.do(t, "POST", "/v1/admission/drop/tokens/claim", adminToken, c.body); r.status != c.status {
			t.Errorf("%s: %d %s, want %d", name, r.status, r.body, c.status)
		}
	}
	if r := e.api.do(t, "POST", "/v1/admission/nope/tokens/claim", adminToken, `{"token":"`+tokB+`"}`); r.status != http.StatusBadRequest ||
		r.errorCode() != "UNKNOWN_QUEUE" {
		t.Errorf("unknown queue: %d %s", r.status, r.body)
	}
	if n := e.adm.called("claim"); n != before+1 {
		t.Errorf("the service was asked %d times, want once (the unknown queue)", n-before)
	}

	// Without a service credential configured the token routes are off.
	off := startServer(t, Config{Admissions: newFakeAdmissions("drop")})
	if r := (&restEnv{srv: off.srv, url: off.base}).do(t, "POST", "/v1/admission/drop/tokens/claim", adminToken, `{"token":"`+tokB+`"}`); r.status != http.StatusNotFound ||
		!strings.Contains(string(r.body), "service credential") {
		t.Errorf("no admin token configured: %d %s", r.status, r.body)
	}
}

func TestAdmissionWebSocket(t *testing.T) {
	e := startAdmissionServer(t, Config{MessageRate: ratelimit.Limit{N: 1000, Per: time.Second}})
	c := dial(t, e.wsURL(), mustToken(t, "ada", nil))
	readFrame(t, c)
	other := dial(t, e.wsURL(), mustToken(t, "bob", nil))
	readFrame(t, other)

	writeText(t, c, []byte(`{"type":"enter","id":"e1","queue":"drop"}`))
	if f := readFrame(t, c); string(f.raw) !=
		`{"type":"entered","re":"e1","position":{"status":"WAITING","rank":0,"total":1,"eta":{"seconds":0.5,"low":0.3,"high":1},"pollAfter":1}}` {
		t.Fatalf("enter: %s", f.raw)
	}
	writeText(t, other, []byte(`{"type":"enter","id":"e2","queue":"drop"}`))
	if f := readFrame(t, other); f.Type != "entered" || !strings.Contains(string(f.raw), `"rank":1,"total":2`) {
		t.Fatalf("bob's enter: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"enter","id":"e3","queue":"drop"}`)) // a repeat: the same place
	if f := readFrame(t, c); f.Type != "entered" || f.Re != "e3" || !strings.Contains(string(f.raw), `"rank":0,"total":2`) {
		t.Fatalf("enter again: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"position","id":"p1","queue":"drop"}`))
	if f := readFrame(t, c); f.Type != "position" || f.Re != "p1" || !strings.Contains(string(f.raw), `"status":"WAITING","rank":0,"total":2`) {
		t.Fatalf("position: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"leave","id":"l1","queue":"drop"}`))
	if f := readFrame(t, c); string(f.raw) != `{"type":"left","re":"l1"}` {
		t.Fatalf("leave: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"position","id":"p2","queue":"drop"}`))
	if f := readFrame(t, c); string(f.raw) != `{"type":"position","re":"p2","position":{"status":"NOT_ENTERED"}}` {
		t.Fatalf("position after leaving: %s", f.raw)
	}
	writeText(t, other, []byte(`{"type":"position","id":"p3","queue":"drop"}`))
	if f := readFrame(t, other); !strings.Contains(string(f.raw), `"rank":0,"total":1`) {
		t.Fatalf("bob moved up: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"leave","id":"l2","queue":"drop"}`))
	if f := readFrame(t, c); f.Type != "error" || f.Re != "l2" || f.Error.Code != "NOT_FOUND" || f.Error.Message != msgNoPlace {
		t.Fatalf("leave again: %s", f.raw)
	}

	// Strictly decoded: another command's members, unknown members, no
	// queue, a name no queue has.
	calls := e.adm.called("enter") + e.adm.called("position") + e.adm.called("leave")
	for name, tc := range map[string]struct{ frame, code string }{
		"no queue":         {`{"type":"enter","id":"s1"}`, "BAD_REQUEST"},
		"foreign member":   {`{"type":"enter","id":"s2","queue":"drop","ticketId":"t1"}`, "BAD_REQUEST"},
		"region":           {`{"type":"position","id":"s3","queue":"drop","region":"eu"}`, "BAD_REQUEST"},
		"attributes":       {`{"type":"leave","id":"s4","queue":"drop","attributes":{}}`, "BAD_REQUEST"},
		"unknown member":   {`{"type":"enter","id":"s5","queue":"drop","token":"x"}`, "BAD_REQUEST"},
		"queue twice":      {`{"type":"enter","id":"s6","queue":"drop","queue":"vip"}`, "BAD_REQUEST"},
		"case-folded":      {`{"type":"enter","id":"s7","Queue":"drop"}`, "BAD_REQUEST"},
		"bad queue name":   {`{"type":"position","id":"s8","queue":"../x"}`, "UNKNOWN_QUEUE"},
		"status and queue": {`{"type":"status","id":"s9","queue":"drop"}`, "BAD_REQUEST"},
	} {
		writeText(t, c, []byte(tc.frame))
		f := readFrame(t, c)
		if f.Type != "error" || f.Error == nil || f.Error.Code != tc.code || f.Re == "" {
			t.Errorf("%s: %s", name, f.raw)
		}
	}
	if n := e.adm.called("enter") + e.adm.called("position") + e.adm.called("leave"); n != calls {
		t.Errorf("refused frames reached the service: %d calls", n-calls)
	}
	writeText(t, c, []byte(`{"type":"enter","id":"u1","queue":"vip"}`))
	if f := readFrame(t, c); f.Type != "error" || f.Error.Code != "UNKNOWN_QUEUE" || f.Error.Message != "no such admission queue" {
		t.Errorf("unknown queue: %s", f.raw)
	}
	if v := metricValue(t, e.reg, "matchgate_ws_messages_received_total", "type", "enter"); v < 3 {
		t.Errorf("enter frames counted %v", v)
	}
	if v := metricValue(t, e.reg, "matchgate_ws_messages_sent_total", "type", "entered"); v != 3 {
		t.Errorf("entered frames counted %v", v)
	}
}

// Enter shares the join budget, position the read budget, leave the
// cancel budget, over REST and the socket alike.
func TestAdmissionLimits(t *testing.T) {
	e := startAdmissionServer(t, Config{
		Limiter: newLimiter(t),
		Limits: Limits{JoinsPerUser: ratelimit.Limit{N: 3, Per: time.Minute}, ReadsPerUser: ratelimit.Limit{N: 2, Per: time.Minute},
			CancelsPerUser: ratelimit.Limit{N: 1, Per: time.Minute}},
		MessageRate: ratelimit.Limit{N: 1000, Per: time.Second},
	})
	tok := mustToken(t, "ada", nil)
	if r := e.api.do(t, "POST", "/v1/queues/ranked/tickets", tok, ""); r.status != http.StatusAccepted {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	for i := range 2 {
		if r := e.api.do(t, "POST", "/v1/admission/drop/enter", tok, ""); r.status >= 300 {
			t.Fatalf("enter %d: %d %s", i, r.status, r.body)
		}
	}
	r := e.api.do(t, "POST", "/v1/admission/drop/enter", tok, "")
	if r.status != http.StatusTooManyRequests || r.errorCode() != "RATE_LIMITED" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a join and two entries used the budget of 3: %d %s", r.status, r.body)
	}
	c := dial(t, e.wsURL(), tok)
	readFrame(t, c)
	writeText(t, c, []byte(`{"type":"enter","id":"e","queue":"drop"}`))
	if f := readFrame(t, c); f.Type != "error" || f.Error.Code != "RATE_LIMITED" || f.Error.RetryAfter < 1 {
		t.Fatalf("enter on the socket: %s", f.raw)
	}
	if r := e.api.do(t, "GET", "/v1/admission/drop/position", tok, ""); r.status != http.StatusOK {
		t.Fatalf("position: %d %s", r.status, r.body)
	}
	writeText(t, c, []byte(`{"type":"position","id":"p1","queue":"drop"}`))
	if f := readFrame(t, c); f.Type != "position" {
		t.Fatalf("position on the socket: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"position","id":"p2","queue":"drop"}`))
	if f := readFrame(t, c); f.Type != "error" || f.Error.Code != "RATE_LIMITED" {
		t.Fatalf("a third read: %s", f.raw)
	}
	writeText(t, c, []byte(`{"type":"leave","id":"l1","queue":"drop"}`))
	if f := readFrame(t, c); f.Type != "left" {
		t.Fatalf("leave: %s", f.raw)
	}
	if r := e.api.do(t, "DELETE", "/v1/admission/drop", tok, ""); r.status != http.StatusTooManyRequests {
		t.Fatalf("a second leave: %d %s", r.status, r.body)
	}
	if n := e.adm.called("enter"); n != 2 {
		t.Errorf("Enter called %d times, want 2", n)
	}
	if v := metricValue(t, e.reg, "matchgate_refusals_total", "reason", "join_user"); v != 2 {
		t.Errorf("refusals{join_user} = %v", v)
	}
	// The token routes are the service's: not counted against a user.
	for range 5 {
		if r := e.api.do(t, "POST", "/v1/admission/drop/tokens/claim", adminToken, `{"token":"abc"}`); r.status != http.StatusNotFound {
			t.Fatalf("claim: %d %s", r.status, r.body)
		}
	}
}

func TestAdmissionBanned(t *testing.T) {
	bans := &fakeBans{}
	bans.set("mallory", true)
	e := startAdmissionServer(t, Config{Bans: bans})
	tok := mustToken(t, "mallory", nil)
	for _, rq := range [][2]string{{"POST", "/v1/admission/drop/enter"}, {"GET", "/v1/admission/drop/position"}, {"DELETE", "/v1/admission/drop"}} {
		if r := e.api.do(t, rq[0], rq[1], tok, ""); r.status != http.StatusForbidden || r.errorCode() != "FORBIDDEN" {
			t.Errorf("%s %s: %d %s", rq[0], rq[1], r.status, r.body)
		}
	}
	c := dial(t, e.wsURL(), mustToken(t, "eve", nil))
	readFrame(t, c)
	bans.set("eve", true)
	writeText(t, c, []byte(`{"type":"enter","id":"e","queue":"drop"}`))
	if f := readFrame(t, c); f.Type != "error" || f.Error.Code != "FORBIDDEN" {
		t.Fatalf("banned enter: %s", f.raw)
	}
	if n := e.adm.called("enter"); n != 0 {
		t.Fatalf("Enter called %d times for banned users", n)
	}
}

// An admission refusal is told with the edge's message, whatever context
// the service wrapped it in; other errors are classified as before.
func TestClassifyAdmission(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{refuseAdmission(fmt.Errorf("claim drop: %w", admission.ErrAlreadyClaimed), msgNoToken), 409, "ALREADY_CLAIMED", "the token was claimed already"},
		{refuseAdmission(fmt.Errorf("consume drop: %w", admission.ErrNotClaimed), msgNoToken), 409, "NOT_CLAIMED", "the token is not claimed: claim it first"},
		{refuseAdmission(admission.ErrNotFound, msgNoToken), 404, "NOT_FOUND", msgNoToken},
		{refuseAdmission(fmt.Errorf("%w: %q", admission.ErrUnknownQueue, "x"), msgNoPlace), 400, "UNKNOWN_QUEUE", "no such admission queue"},
		{fmt.Errorf("leave: %w", admission.ErrNotFound), 404, "NOT_FOUND", "not found"},
		{refuseAdmission(errors.New("redis: down"), msgNoPlace), 500, "INTERNAL", "internal error"},
	} {
		got := classify(c.err)
		if got.status != c.status || string(got.wire.Code) != c.code || got.wire.Message != c.msg {
			t.Errorf("%v: %d %s %q, want %d %s %q", c.err, got.status, got.wire.Code, got.wire.Message, c.status, c.code, c.msg)
		}
	}
}
