package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

const testSecret = "e2e-secret-0123456789abcdef"

// startServer boots the whole server through run on 127.0.0.1:0 and stops
// it (gracefully) when the test ends.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	base, _ := startServerWithLog(t, args...)
	return base
}

// startServerWithLog is startServer that also returns the server's log,
// which is printed (its tail) if the test fails.
func startServerWithLog(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--guests", "true", "--log-level", "debug"}, args...)
	go func() {
		done <- run(ctx, args, func(string) string { return "" }, io.Discard, logs, func(a net.Addr) { addrs <- a })
	}()
	select {
	case a := <-addrs:
		t.Cleanup(func() {
			cancel()
			defer func() {
				if t.Failed() {
					t.Logf("server log (tail):\n%s", tail(logs.String(), 200000))
				}
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("server stopped with %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("server did not stop within 20s")
			}
		})
		return "http://" + a.String(), logs
	case err := <-done:
		cancel()
		t.Fatalf("server failed to start: %v\n%s", err, logs.String())
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatalf("server did not start; log:\n%s", logs.String())
	}
	return "", nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type guest struct {
	Token  string `json:"token"`
	UserID string `json:"userId"`
}

func newGuest(t testing.TB, base string, skill float64) guest {
	t.Helper()
	body := fmt.Sprintf(`{"skill": %v}`, skill)
	resp, err := http.Post(base+"/v1/auth/guest", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("guest: %d %s", resp.StatusCode, b)
	}
	var g guest
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// frame is a decoded server frame; raw keeps the bytes for typed decoding.
type frame struct {
	Type  string                 `json:"type"`
	Re    string                 `json:"re"`
	Error *struct{ Code string } `json:"error"`
	raw   []byte
}

type client struct {
	t      testing.TB
	conn   *websocket.Conn
	g      guest
	frames chan frame
	// skipped keeps frames an expect passed over, for later expects: a push
	// may overtake the reply to the command that caused it.
	skipped []frame
	closed  chan struct{}
}

func dial(t testing.TB, base string, g guest) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := strings.Replace(base, "http", "ws", 1) + "/v1/ws?token=" + url.QueryEscape(g.Token)
	conn, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := &client{t: t, conn: conn, g: g, frames: make(chan frame, 64), closed: make(chan struct{})}
	go func() {
		defer close(c.closed)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			var f frame
			if err := json.Unmarshal(b, &f); err != nil {
				t.Errorf("bad frame %q: %v", b, err)
				return
			}
			f.raw = b
			c.frames <- f
		}
	}()
	t.Cleanup(func() { c.conn.Close(websocket.StatusNormalClosure, "") })
	return c
}

func (c *client) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// expect waits for the next frame of type typ. Frames of other types are
// kept for later expects, except that an error frame fails the test.
func (c *client) expect(typ string, within time.Duration) frame {
	c.t.Helper()
	for i, f := range c.skipped {
		if f.Type == typ {
			c.skipped = append(c.skipped[:i:i], c.skipped[i+1:]...)
			return f
		}
	}
	timer := time.After(within)
	for {
		select {
		case f := <-c.frames:
			if f.Type == typ {
				return f
			}
			if f.Type == "error" {
				c.t.Fatalf("%s: error frame while waiting for %s: %s", c.g.UserID, typ, f.raw)
			}
			c.skipped = append(c.skipped, f)
		case <-timer:
			c.t.Fatalf("%s: no %s within %s", c.g.UserID, typ, within)
		}
	}
}

type helloFrame struct {
	UserID  string           `json:"userId"`
	Tickets []matcher.Ticket `json:"tickets"`
	Matches []matcher.Match  `json:"matches"`
}

func decode[T any](t testing.TB, f frame) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(f.raw, &v); err != nil {
		t.Fatalf("decode %s: %v", f.raw, err)
	}
	return v
}

func getTicket(t testing.TB, base string, g guest, id string) matcher.TicketView {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/tickets/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET ticket %s: %d %s", id, resp.StatusCode, b)
	}
	var v matcher.TicketView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// exercise connects n players spread over the servers in bases, has them all
// join the duel queue, and checks that every one of them is pushed a match
// that GET agrees with; then checks the reconnect catch-up.
func exercise(t *testing.T, bases []string, n int) {
	clients := make([]*client, n)
	for i := range clients {
		base := bases[i%len(bases)]
		clients[i] = dial(t, base, newGuest(t, base, 1500))
		h := decode[helloFrame](t, clients[i].expect("hello", 5*time.Second))
		if h.UserID != clients[i].g.UserID || len(h.Tickets) != 0 {
			t.Fatalf("hello: %+v", h)
		}
	}
	ticketOf := map[string]string{}
	for i, c := range clients {
		c.send(map[string]any{"type": "join", "id": fmt.Sprint("j", i), "queue": "duel"})
		j := decode[struct {
			Re     string
			Ticket matcher.Ticket
		}](t, c.expect("joined", 5*time.Second))
		if j.Re != fmt.Sprint("j", i) || j.Ticket.Status != matcher.StatusWaiting || j.Ticket.Skill != 1500 {
			t.Fatalf("joined: %+v", j)
		}
		ticketOf[c.g.UserID] = j.Ticket.ID
	}
	matchOf := map[string]matcher.Match{}
	for i, c := range clients {
		m := decode[struct{ Match matcher.Match }](t, c.expect("match.found", 10*time.Second)).Match
		if len(m.Players) != 2 || !slices.Contains(m.UserIDs(), c.g.UserID) {
			t.Fatalf("match.found for %s: %+v", c.g.UserID, m)
		}
		matchOf[c.g.UserID] = m
		v := getTicket(t, bases[i%len(bases)], c.g, ticketOf[c.g.UserID])
		if v.Ticket.Status != matcher.StatusMatched || v.Ticket.MatchID != m.ID || v.Match == nil || v.Match.ID != m.ID {
			t.Fatalf("GET disagrees with push for %s: %+v vs %s", c.g.UserID, v, m.ID)
		}
	}
	for u, m := range matchOf {
		for _, p := range m.Players {
			if other := matchOf[p.UserID]; other.ID != m.ID {
				t.Fatalf("%s pushed %s, partner %s pushed %s", u, m.ID, p.UserID, other.ID)
			}
		}
	}

	// A player who drops while waiting gets the match in hello on return.
	a := newGuest(t, bases[0], 1500)
	ca := dial(t, bases[0], a)
	ca.expect("hello", 5*time.Second)
	ca.send(map[string]any{"type": "join", "id": "x", "queue": "duel"})
	aTicket := decode[struct{ Ticket matcher.Ticket }](t, ca.expect("joined", 5*time.Second)).Ticket
	ca.conn.Close(websocket.StatusNormalClosure, "bye")
	<-ca.closed

	b := newGuest(t, bases[len(bases)-1], 1500)
	cb := dial(t, bases[len(bases)-1], b)
	cb.expect("hello", 5*time.Second)
	cb.send(map[string]any{"type": "join", "id": "y", "queue": "duel"})
	cb.expect("joined", 5*time.Second)
	m := decode[struct{ Match matcher.Match }](t, cb.expect("match.found", 10*time.Second)).Match
	if !slices.Contains(m.UserIDs(), a.UserID) {
		t.Fatalf("b matched with %v, want a", m.UserIDs())
	}
	back := dial(t, bases[0], a)
	h := decode[helloFrame](t, back.expect("hello", 5*time.Second))
	if len(h.Matches) != 1 || h.Matches[0].ID != m.ID || len(h.Tickets) != 1 || h.Tickets[0].ID != aTicket.ID || h.Tickets[0].Status != matcher.StatusMatched {
		t.Fatalf("hello after reconnect: %s", back.lastRaw(h))
	}
}

func (c *client) lastRaw(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestEndToEndEmbedded(t *testing.T) {
	base := startServer(t)
	exercise(t, []string{base}, 24)
	// The demo page is served.
	resp, err := http.Get(base + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /: %v %v", resp, err)
	}
	resp.Body.Close()
	// The metrics include the pools' depth and the matcher's work.
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`matchgate_queue_depth{pool="",queue="duel",region="global"} 0`, "matchgate_queue_oldest_wait_seconds{",
		`matchgate_matches_total{formed_by="FILLED",queue="duel"}`, "matchgate_allocation_duration_seconds_bucket{", "matchgate_ws_connections "} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// pgURL returns a URL for a fresh, migrated schema.
func pgURL(t *testing.T) string {
	t.Helper()
	return pgtest.NewURL(t)
}

func TestEndToEndRedisPostgres(t *testing.T) {
	redistest.Real(t) // skips (or fails in CI) when Redis is absent
	prefix := redistest.Prefix(t)
	base := startServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix)
	exercise(t, []string{base}, 24)
}

// The same run on a Redis Cluster named by its seed nodes.
func TestEndToEndRedisCluster(t *testing.T) {
	rdb := redistest.Cluster(t) // skips (or fails in CI) when no cluster is named
	prefix := redistest.Prefix(t)
	url := redistest.ClusterURL()
	base := startServer(t, "--redis-url", url, "--postgres-url", pgURL(t), "--redis-prefix", prefix)
	exercise(t, []string{base}, 24)
	// The keys are spread over the masters: the server spoke to the cluster.
	var mu sync.Mutex
	holding := 0
	err := rdb.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, prefix+"*").Result()
		mu.Lock()
		defer mu.Unlock()
		if len(keys) > 0 {
			holding++
		}
		return err
	})
	if err != nil || holding < 2 {
		t.Fatalf("keys of the run on %d masters (err %v), want them spread", holding, err)
	}
}

// Two server processes (the real binary) share one Redis and one
// PostgreSQL: players on different gateways are matched with each other and
// both are pushed.
func TestEndToEndTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	redistest.Real(t)
	twoProcesses(t, redistest.URL())
}

// The same on a Redis Cluster: the processes share the partitions through
// leases in the cluster and reach each other's players through sharded
// channels.
func TestEndToEndTwoProcessesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	redistest.Cluster(t)
	twoProcesses(t, redistest.ClusterURL())
}

func twoProcesses(t *testing.T, redisURL string) {
	prefix := redistest.Prefix(t)
	db := pgURL(t)
	bin := buildBinary(t)
	var bases []string
	for i := range 2 {
		n := spawnNode(t, bin, fmt.Sprint("node", i), true, "--redis-url", redisURL, "--postgres-url", db, "--redis-prefix", prefix)
		bases = append(bases, n.base)
	}
	exercise(t, bases, 24)
}

// buildBinary builds this package's binary for tests that run processes.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "matchgate")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// node is one server process of a test of several.
type node struct {
	name   string
	base   string // "" without the gateway role
	cmd    *exec.Cmd
	logs   *syncBuffer
	killed bool
}

// spawnNode starts `bin serve` named name with args; with gateway set it
// listens on a free port and is waited for until ready. It is stopped with
// SIGINT at cleanup (and must exit cleanly), unless killed before.
func spawnNode(t *testing.T, bin, name string, gateway bool, args ...string) *node {
	t.Helper()
	n := &node{name: name, logs: &syncBuffer{}}
	args = append([]string{"serve", "--secret", testSecret, "--guests", "true", "--node", name}, args...)
	port := ""
	if gateway {
		port = freePort(t)
		args = append(args, "--addr", port)
	}
	n.cmd = exec.Command(bin, args...)
	n.cmd.Stderr = n.logs
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n.killed {
			return
		}
		_ = n.cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- n.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s exited with %v\n%s", name, err, n.logs.String())
			}
		case <-time.After(20 * time.Second):
			_ = n.cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGINT", name)
		}
	})
	if gateway {
		n.base = "http://" + port
		waitReady(t, n.base, n.logs)
	}
	return n
}

// kill stops the process at once, as a crash would.
func (n *node) kill(t *testing.T) {
	t.Helper()
	n.killed = true
	if err := n.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = n.cmd.Wait()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(t *testing.T, base string, logs *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready; log:\n%s", base, logs.String())
}

// With --postgres-replica-url a ticket's GET reads the replica, and the
// primary for what the replica lacks. The "replica" here is a schema of its
// own behind read-only sessions, so a write sent there would fail, and what
// it holds differs from the primary where the test says so.
func TestEndToEndPostgresReplica(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	primary, replica := pgURL(t), pgURL(t)
	if err := run(context.Background(), []string{"migrate", "--postgres-url", replica}, func(string) string { return "" }, io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(replica)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	base := startServer(t, "--redis-url", redistest.URL(), "--postgres-url", primary, "--postgres-replica-url", u.String(), "--redis-prefix", prefix)

	g := newGuest(t, base, 1500)
	first, ok := tryJoin(base, g)
	if !ok {
		t.Fatal("join")
	}
	// The replica learns the ticket, at a version of its own.
	conn, err := pgx.Connect(context.Background(), primary)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	schemaOf := func(raw string) string {
		u, _ := url.Parse(raw)
		return pgx.Identifier{u.Query().Get("search_path")}.Sanitize()
	}
	copyRow := fmt.Sprintf("INSERT INTO %s.tickets SELECT * FROM %s.tickets WHERE id = $1", schemaOf(replica), schemaOf(primary))
	if _, err := conn.Exec(context.Background(), copyRow, first); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), fmt.Sprintf("UPDATE %s.tickets SET version = 99 WHERE id = $1", schemaOf(replica)), first); err != nil {
		t.Fatal(err)
	}
	if v := getTicket(t, base, g, first); v.Ticket.Version != 99 {
		t.Fatalf("GET of a ticket the replica holds: version %d, want the replica's 99", v.Ticket.Version)
	}
	// A ticket the replica has not seen is read from the primary.
	if _, ok := tryCancel(base, g, first); !ok {
		t.Fatal("cancel")
	}
	second, ok := tryJoin(base, g)
	if !ok {
		t.Fatal("second join")
	}
	if v := getTicket(t, base, g, second); v.Ticket.ID != second || v.Ticket.Status != matcher.StatusWaiting {
		t.Fatalf("GET of a ticket only the primary holds: %+v", v.Ticket)
	}
}

func tryCancel(base string, g guest, id string) (int, bool) {
	req, _ := http.NewRequest(http.MethodDelete, base+"/v1/tickets/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	resp.Body.Close()
	return resp.StatusCode, resp.StatusCode == http.StatusOK
}

// A replica without a primary is refused at start.
func TestReplicaNeedsPrimary(t *testing.T) {
	err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--postgres-replica-url", "postgres://127.0.0.1/x"},
		func(string) string { return "" }, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "--postgres-replica-url needs --postgres-url") {
		t.Fatalf("serve with a replica only: %v", err)
	}
}
