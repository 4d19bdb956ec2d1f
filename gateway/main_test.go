package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/matchgate/matchgate/matcher"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var testSecret = []byte("test-secret-0123456789abcdef")

// fakeMatchmaker is an in-memory Matchmaker whose answers tests override.
type fakeMatchmaker struct {
	mu      sync.Mutex
	calls   []string
	lastReq matcher.JoinRequest

	join      func(ctx context.Context, req matcher.JoinRequest) (matcher.Ticket, error)
	cancel    func(ctx context.Context, userID, ticketID string) (matcher.Ticket, error)
	ticket    func(ctx context.Context, userID, ticketID string) (matcher.TicketView, error)
	heartbeat func(ctx context.Context, userID, ticketID string) error
	accept    func(ctx context.Context, userID, matchID string) (matcher.Match, error)
	decline   func(ctx context.Context, userID, matchID string) (matcher.Match, error)
	userState func(ctx context.Context, userID string) (matcher.UserState, error)
	history   func(ctx context.Context, userID, before string, limit int) (matcher.UserState, error)
	queues    func(ctx context.Context) ([]matcher.QueueInfo, error)
}

func (f *fakeMatchmaker) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeMatchmaker) called(call string) int {
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

func (f *fakeMatchmaker) Join(ctx context.Context, req matcher.JoinRequest) (matcher.Ticket, error) {
	f.record("join")
	f.mu.Lock()
	f.lastReq = req
	f.mu.Unlock()
	if f.join != nil {
		return f.join(ctx, req)
	}
	return matcher.Ticket{ID: "t-1", UserID: req.UserID, Queue: req.Queue, Region: req.Region,
		Status: matcher.StatusWaiting, Attributes: req.Attributes, Version: 1}, nil
}

func (f *fakeMatchmaker) Cancel(ctx context.Context, userID, ticketID string) (matcher.Ticket, error) {
	f.record("cancel")
	if f.cancel != nil {
		return f.cancel(ctx, userID, ticketID)
	}
	return matcher.Ticket{ID: ticketID, UserID: userID, Status: matcher.StatusCancelled, CancelReason: matcher.ReasonUser}, nil
}

func (f *fakeMatchmaker) Ticket(ctx context.Context, userID, ticketID string) (matcher.TicketView, error) {
	f.record("ticket")
	if f.ticket != nil {
		return f.ticket(ctx, userID, ticketID)
	}
	return matcher.TicketView{Ticket: matcher.Ticket{ID: ticketID, UserID: userID, Status: matcher.StatusWaiting}}, nil
}

func (f *fakeMatchmaker) Heartbeat(ctx context.Context, userID, ticketID string) error {
	f.record("heartbeat")
	if f.heartbeat != nil {
		return f.heartbeat(ctx, userID, ticketID)
	}
	return nil
}

func (f *fakeMatchmaker) Accept(ctx context.Context, userID, matchID string) (matcher.Match, error) {
	f.record("accept")
	if f.accept != nil {
		return f.accept(ctx, userID, matchID)
	}
	return matcher.Match{ID: matchID, State: matcher.MatchReady}, nil
}

func (f *fakeMatchmaker) Decline(ctx context.Context, userID, matchID string) (matcher.Match, error) {
	f.record("decline")
	if f.decline != nil {
		return f.decline(ctx, userID, matchID)
	}
	return matcher.Match{ID: matchID, State: matcher.MatchDissolved}, nil
}

func (f *fakeMatchmaker) UserState(ctx context.Context, userID string) (matcher.UserState, error) {
	f.record("userState")
	if f.userState != nil {
		return f.userState(ctx, userID)
	}
	return matcher.UserState{}, nil
}

func (f *fakeMatchmaker) TicketHistory(ctx context.Context, userID, before string, limit int) (matcher.UserState, error) {
	f.record("history")
	if f.history != nil {
		return f.history(ctx, userID, before, limit)
	}
	return matcher.UserState{Tickets: []matcher.Ticket{}, Matches: []matcher.Match{}}, nil
}

func (f *fakeMatchmaker) Queues(ctx context.Context) ([]matcher.QueueInfo, error) {
	f.record("queues")
	if f.queues != nil {
		return f.queues(ctx)
	}
	return []matcher.QueueInfo{{Name: "ranked", Kind: "skill", Players: 2, Regions: []string{"eu"}, Depth: map[string]int{"eu": 3}}}, nil
}

// fakeSubscriber is an in-memory Subscriber: publish calls every deliver
// callback of the user synchronously, like the one shared dispatch goroutine.
type fakeSubscriber struct {
	mu         sync.Mutex
	next       int
	subs       map[string]map[int]func([]byte)
	subscribed chan string
	fail       error
}

func newFakeSubscriber() *fakeSubscriber {
	return &fakeSubscriber{subs: map[string]map[int]func([]byte){}, subscribed: make(chan string, 1024)}
}

func (f *fakeSubscriber) Subscribe(_ context.Context, userID string, deliver func([]byte)) (func(), error) {
	f.mu.Lock()
	if f.fail != nil {
		f.mu.Unlock()
		return nil, f.fail
	}
	f.next++
	id := f.next
	if f.subs[userID] == nil {
		f.subs[userID] = map[int]func([]byte){}
	}
	f.subs[userID][id] = deliver
	f.mu.Unlock()
	f.subscribed <- userID
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs[userID], id)
			f.mu.Unlock()
		})
	}, nil
}

// publish delivers frame to every subscription of userID; it reports how
// many there were.
func (f *fakeSubscriber) publish(userID string, frame []byte) int {
	f.mu.Lock()
	var ds []func([]byte)
	for _, d := range f.subs[userID] {
		ds = append(ds, d)
	}
	f.mu.Unlock()
	for _, d := range ds {
		d(frame)
	}
	return len(ds)
}

func (f *fakeSubscriber) count(userID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[userID])
}

// waitSubscribed waits until userID has subscribed n more times.
func (f *fakeSubscriber) waitSubscribed(t *testing.T, userID string, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for n > 0 {
		select {
		case u := <-f.subscribed:
			if u == userID {
				n--
			}
		case <-deadline:
			t.Fatalf("%s did not subscribe", userID)
		}
	}
}

// fakeClock is a settable clock for token checks.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// testEnv is a running gateway with its fakes.
type testEnv struct {
	srv  *Server
	mm   *fakeMatchmaker
	sub  *fakeSubscriber
	reg  *prometheus.Registry
	base string // http://127.0.0.1:port
	stop func() error
}

// startServer runs a gateway on a loopback listener through Run; cleanup
// cancels it and checks that Run drained and returned nil.
func startServer(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	env := &testEnv{mm: &fakeMatchmaker{}, sub: newFakeSubscriber(), reg: prometheus.NewRegistry()}
	if cfg.Matchmaker == nil {
		cfg.Matchmaker = env.mm
	}
	if cfg.Subscriber == nil {
		cfg.Subscriber = env.sub
	}
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	if cfg.Registerer == nil {
		cfg.Registerer = env.reg
	}
	if cfg.Node == "" {
		cfg.Node = "node-test"
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	env.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	var once sync.Once
	var runErr error
	env.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = errors.New("Run did not return")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := env.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return env
}

func (e *testEnv) wsURL() string { return strings.Replace(e.base, "http://", "ws://", 1) + "/v1/ws" }

func mustToken(t testing.TB, sub string, skill *float64) string {
	t.Helper()
	tok, err := MintToken(testSecret, sub, skill, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rawTransport performs each request on its own TCP connection and starts
// no goroutine, so goroutine counts in tests measure only the server. A 101
// response keeps the connection as the (read-write) body, as coder/websocket
// expects.
type rawTransport struct{}

func (rawTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(req.Context(), "tcp", req.URL.Host)
	if err != nil {
		return nil, err
	}
	if dl, ok := req.Context().Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = conn.SetDeadline(time.Time{})
		resp.Body = &upgradedConn{r: br, Conn: conn}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	conn.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

type upgradedConn struct {
	r *bufio.Reader
	net.Conn
}

func (u *upgradedConn) Read(p []byte) (int, error) { return u.r.Read(p) }

var testClient = &http.Client{Transport: rawTransport{}}

// dial opens a WebSocket with the token in the query string.
func dial(t testing.TB, url, token string) *websocket.Conn {
	t.Helper()
	c, err := tryDial(url, token, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func tryDial(url, token string, header http.Header) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if token != "" {
		url += "?token=" + token
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: testClient, HTTPHeader: header})
	if err != nil {
		if resp != nil {
			return nil, &dialError{status: resp.StatusCode, err: err}
		}
		return nil, err
	}
	return c, nil
}

type dialError struct {
	status int
	err    error
}

func (e *dialError) Error() string { return fmt.Sprintf("status %d: %v", e.status, e.err) }

// frame is any server→client frame, decoded.
type frame struct {
	Type    string           `json:"type"`
	Re      string           `json:"re"`
	UserID  string           `json:"userId"`
	Node    string           `json:"node"`
	Ticket  *matcher.Ticket  `json:"ticket"`
	Match   *matcher.Match   `json:"match"`
	Tickets []matcher.Ticket `json:"tickets"`
	Matches []matcher.Match  `json:"matches"`
	More    bool             `json:"more"`
	Next    string           `json:"next"`
	Seq     int              `json:"seq"`
	Error   *struct {
		Code       string  `json:"code"`
		Message    string  `json:"message"`
		TicketID   *string `json:"ticketId"`
		MatchID    *string `json:"matchId"`
		RetryAfter int     `json:"retryAfter"`
	} `json:"error"`
	raw []byte
}

func readFrame(t testing.TB, c *websocket.Conn) frame {
	t.Helper()
	f, err := tryReadFrame(c, 5*time.Second)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return f
}

func tryReadFrame(c *websocket.Conn, timeout time.Duration) (frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	if typ != websocket.MessageText {
		return frame{}, fmt.Errorf("got %v frame", typ)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return frame{}, fmt.Errorf("decode %s: %w", b, err)
	}
	f.raw = b
	return f, nil
}

func writeJSONFrame(t testing.TB, c *websocket.Conn, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, c, b)
}

func writeText(t testing.TB, c *websocket.Conn, b []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// waitCloseStatus reads until the connection ends and returns its close code.
func waitCloseStatus(t testing.TB, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("connection did not close")
			}
			return websocket.CloseStatus(err)
		}
	}
}

// metricValue sums the samples of a counter or gauge whose labels include
// every pair in labels.
func metricValue(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) sessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots.Count()
}

func ptr[T any](v T) *T { return &v }
