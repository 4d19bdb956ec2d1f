package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/notify"
)

// The hostile-input suite: a real server (Redis and PostgreSQL) under
// attack through every door while honest players on other sockets join and
// are matched. Afterwards the server is ready, every honest player was
// matched with another honest player and agrees with the record, no honest
// socket was closed, the record holds exactly the changes the server
// accepted, and no token reached the log.

const (
	hostileAdminToken = "hostile-suite-admin-token-0123456789"
	hostileRotatedKey = "rotated-key-0123456789abcdef"
)

// injections go into every string field a client controls.
var injections = []string{
	`'; DROP TABLE tickets; --`,
	`" OR "1"="1`,
	`1); DELETE FROM matches; --`,
	`$$; COPY tickets TO PROGRAM 'id'; $$`,
	`"]]) redis.call('FLUSHALL') --`,
	`')) redis.call("DEL", KEYS[1]) --`,
	`mg:{duel:global}:pool`,
	`*`,
	"\r\nX-Injected: 1",
	"nul\x00byte",
	strings.Repeat("A", 300),
}

// hostile is the attacked server and the bookkeeping of what it accepted.
type hostile struct {
	t      *testing.T
	base   string
	logs   *syncBuffer
	prefix string
	db     *pgxpool.Pool

	mu       sync.Mutex
	accepted map[string]int // user → joins the server accepted
	attacker map[string]bool
	from     map[string]string // guest → the address it signed in from
	tokens   []string          // every token sent, to look for in the log

	closeCodes sync.Map // *client → websocket.StatusCode the socket ended with
}

// closeCode is how a closed client's socket ended (-1: no close frame).
func (h *hostile) closeCode(c *client) websocket.StatusCode {
	<-c.closed
	v, _ := h.closeCodes.Load(c)
	code, _ := v.(websocket.StatusCode)
	return code
}

// startHostileServer is startServer keeping the log.
func startHostileServer(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	return startServerWithLog(t, args...)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// do sends a REST request from the client address xff (through the
// trusted proxy: the server runs with --trusted-proxies 127.0.0.1).
func (h *hostile) do(method, path, token, xff, body string, hdr ...string) (int, http.Header, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// guestFrom signs in a guest from the client address xff.
func (h *hostile) guestFrom(xff string, attacker bool) guest {
	h.t.Helper()
	status, _, b := h.do("POST", "/v1/auth/guest", "", xff, `{"skill":1500}`)
	if status != 200 {
		h.t.Fatalf("guest from %s: %d %s", xff, status, b)
	}
	var g guest
	if err := json.Unmarshal(b, &g); err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.attacker[g.UserID] = attacker
	h.tokens = append(h.tokens, g.Token)
	h.from[g.UserID] = xff
	h.mu.Unlock()
	return g
}

func (h *hostile) accept(user string) {
	h.mu.Lock()
	h.accepted[user]++
	h.mu.Unlock()
}

func (h *hostile) noteToken(tok string) {
	h.mu.Lock()
	h.tokens = append(h.tokens, tok)
	h.mu.Unlock()
}

// dialFrom opens a socket from xff; the client reads every frame into
// c.frames (so it answers pings).
func (h *hostile) dialFrom(g guest, xff string) *client {
	h.t.Helper()
	c, err := h.tryDialFrom(g.Token, xff, nil)
	if err != nil {
		h.t.Fatalf("dial from %s: %v", xff, err)
	}
	cl := &client{t: h.t, conn: c, g: g, frames: make(chan frame, 256), closed: make(chan struct{})}
	go func() {
		defer close(cl.closed)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				h.closeCodes.Store(cl, websocket.CloseStatus(err))
				return
			}
			var f frame
			if json.Unmarshal(b, &f) != nil {
				h.t.Errorf("a frame that is not JSON: %q", b)
				return
			}
			f.raw = b
			select {
			case cl.frames <- f:
			default: // attackers' floods of errors are not all read
			}
		}
	}()
	h.t.Cleanup(func() { _ = c.CloseNow() })
	return cl
}

func (h *hostile) tryDialFrom(token, xff string, hc *http.Client) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{}
	if xff != "" {
		hdr.Set("X-Forwarded-For", xff)
	}
	u := strings.Replace(h.base, "http", "ws", 1) + "/v1/ws?token=" + url.QueryEscape(token)
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr, HTTPClient: hc})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("status %d: %w", resp.StatusCode, err)
		}
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

// next returns the next frame of any type.
func next(t *testing.T, c *client, within time.Duration) frame {
	t.Helper()
	select {
	case f := <-c.frames:
		return f
	case <-time.After(within):
		t.Fatalf("%s: no frame within %s", c.g.UserID, within)
	}
	return frame{}
}

// reply reads frames until the one answering request id re.
func reply(t *testing.T, c *client, re string, within time.Duration) frame {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case f := <-c.frames:
			if f.Re == re {
				return f
			}
		case <-deadline:
			t.Fatalf("%s: no reply to %q within %s", c.g.UserID, re, within)
		}
	}
}

// expectError reads frames until an error frame and returns its code.
func expectError(t *testing.T, c *client, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case f := <-c.frames:
			if f.Type == "error" {
				return f.Error.Code
			}
		case <-deadline:
			t.Fatalf("%s: no error frame within %s", c.g.UserID, within)
		}
	}
}

func (h *hostile) metric(name string) float64 {
	h.t.Helper()
	_, _, b := h.do("GET", "/metrics", "", "", "")
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			if i := strings.LastIndexByte(line, ' '); i > 0 {
				v, _ := strconv.ParseFloat(line[i+1:], 64)
				sum += v
			}
		}
	}
	return sum
}

func (h *hostile) eventually(what string, within time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostileInput(t *testing.T) {
	redistest.Real(t) // skips (or fails in CI) when Redis is absent
	prefix := redistest.Prefix(t)
	dbURL := pgURL(t) // skips (or fails in CI) when PostgreSQL is absent
	base, logs := startHostileServer(t,
		"--redis-url", redistest.URL(), "--postgres-url", dbURL, "--redis-prefix", prefix, "--node", "hostile-node",
		"--admin-token", hostileAdminToken, "--secrets", "k2="+hostileRotatedKey,
		"--trusted-proxies", "127.0.0.1", "--limit-exempt", "",
		"--limit-joins-user", "5/1m", "--limit-joins-ip", "30/1m", "--limit-connects-ip", "30/1m", "--limit-guests-ip", "30/1m",
		"--limit-messages", "20/1s", "--max-sockets-per-user", "4",
		"--ping-interval", "1s", "--ping-timeout", "1s")
	ctx := context.Background()
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	h := &hostile{t: t, base: base, logs: logs, prefix: prefix, db: db, accepted: map[string]int{}, attacker: map[string]bool{}, from: map[string]string{}}

	// Honest players: eight guests from 127.0.0.1, each on its own socket.
	honest := make([]*client, 8)
	for i := range honest {
		honest[i] = h.dialFrom(h.guestFrom("", false), "")
		honest[i].expect("hello", 5*time.Second)
	}
	tickets := map[string]matcher.Ticket{}
	joinHonest := func(cs []*client) {
		t.Helper()
		for i, c := range cs {
			c.send(map[string]any{"type": "join", "id": fmt.Sprint("h", i), "queue": "duel"})
			tk := decode[struct{ Ticket matcher.Ticket }](t, c.expect("joined", 5*time.Second)).Ticket
			tickets[c.g.UserID] = tk
			h.accept(c.g.UserID)
		}
	}
	matches := map[string]matcher.Match{}
	awaitHonest := func(cs []*client) {
		t.Helper()
		for _, c := range cs {
			m := decode[struct{ Match matcher.Match }](t, c.expect("match.found", 10*time.Second)).Match
			matches[c.g.UserID] = m
		}
	}
	joinHonest(honest[:4])
	awaitHonest(honest[:4])
	victim := honest[0]
	victimTicket := getTicket(t, base, victim.g, tickets[victim.g.UserID].ID)

	var attacks sync.WaitGroup
	var floodUser guest // closed mid-flood: accounted for at the end

	// Slowloris: headers that never finish are cut off (ReadHeaderTimeout).
	attacks.Go(func() {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "))
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		start := time.Now()
		_, err = io.ReadAll(conn)
		if err != nil || time.Since(start) > 10*time.Second {
			t.Errorf("slowloris: connection held %v (%v)", time.Since(start), err)
		}
	})

	t.Run("forged tokens", func(t *testing.T) {
		now := time.Now()
		sign := func(m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
			tok := jwt.NewWithClaims(m, c)
			if kid != "" {
				tok.Header["kid"] = kid
			}
			s, err := tok.SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		claims := jwt.MapClaims{"sub": victim.g.UserID, "exp": now.Add(time.Hour).Unix()}
		expired, _ := gateway.MintToken([]byte(testSecret), victim.g.UserID, nil, time.Minute, now.Add(-time.Hour))
		forged := map[string]string{
			"wrong key":       sign(jwt.SigningMethodHS256, []byte("attacker-guess-0123456789abcdef"), "", claims),
			"alg none":        sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claims),
			"HS512":           sign(jwt.SigningMethodHS512, []byte(testSecret), "", claims),
			"expired":         expired,
			"unknown kid":     sign(jwt.SigningMethodHS256, []byte(hostileRotatedKey), "k9", claims),
			"kid, wrong key":  sign(jwt.SigningMethodHS256, []byte(testSecret), "k2", claims),
			"future nbf":      sign(jwt.SigningMethodHS256, []byte(testSecret), "", jwt.MapClaims{"sub": "x", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(time.Hour).Unix()}),
			"truncated":       victim.g.Token[:len(victim.g.Token)-4],
			"admin as player": hostileAdminToken,
		}
		for name, tok := range forged {
			h.noteToken(tok)
			if s, _, b := h.do("GET", "/v1/tickets/"+victimTicket.Ticket.ID, tok, "203.0.113.1", ""); s != 401 {
				t.Errorf("%s: GET %d %s", name, s, b)
			}
			if s, _, _ := h.do("POST", "/v1/queues/duel/tickets", tok, "203.0.113.1", `{}`); s != 401 {
				t.Errorf("%s: join %d", name, s)
			}
			if _, err := h.tryDialFrom(tok, "203.0.113.1", nil); err == nil || !strings.Contains(err.Error(), "status 401") {
				t.Errorf("%s: upgrade %v", name, err)
			}
			if tok == hostileAdminToken {
				continue // it is the admin token, on the admin API
			}
			if s, _, _ := h.do("PUT", "/v1/admin/bans/"+victim.g.UserID, tok, "203.0.113.1", `{}`); s != 401 {
				t.Errorf("%s: admin %d", name, s)
			}
		}
		// The rotated key works when the token names it.
		rotated := sign(jwt.SigningMethodHS256, []byte(hostileRotatedKey), "k2", jwt.MapClaims{"sub": "rotated-user", "exp": now.Add(time.Hour).Unix()})
		h.noteToken(rotated)
		if s, _, b := h.do("GET", "/v1/tickets/00000000-0000-0000-0000-000000000000", rotated, "203.0.113.1", ""); s != 404 {
			t.Errorf("rotated key: %d %s", s, b)
		}
	})

	t.Run("other users' tickets and matches", func(t *testing.T) {
		g := h.guestFrom("203.0.113.2", true)
		tid, mid := victimTicket.Ticket.ID, victimTicket.Ticket.MatchID
		for _, rq := range [][2]string{
			{"GET", "/v1/tickets/" + tid}, {"DELETE", "/v1/tickets/" + tid}, {"PUT", "/v1/tickets/" + tid + "/heartbeat"},
			{"POST", "/v1/matches/" + mid + "/accept"}, {"POST", "/v1/matches/" + mid + "/decline"},
		} {
			if s, _, b := h.do(rq[0], rq[1], g.Token, "203.0.113.2", ""); s != 404 || strings.Contains(string(b), victim.g.UserID) {
				t.Errorf("%s %s: %d %s", rq[0], rq[1], s, b)
			}
		}
		c := h.dialFrom(g, "203.0.113.2")
		c.expect("hello", 5*time.Second)
		for _, f := range []map[string]any{
			{"type": "cancel", "id": "c", "ticketId": tid},
			{"type": "accept", "id": "a", "matchId": mid},
			{"type": "decline", "id": "d", "matchId": mid},
		} {
			c.send(f)
			if code := expectError(t, c, 5*time.Second); code != "NOT_FOUND" {
				t.Errorf("%v: %s", f, code)
			}
		}
	})

	t.Run("malformed and binary frames", func(t *testing.T) {
		c := h.dialFrom(h.guestFrom("203.0.113.3", true), "203.0.113.3")
		c.expect("hello", 5*time.Second)
		for _, raw := range []string{
			`{"type":`, `[]`, `"join"`, `null`, `{"type":"join","queue":"ranked","queue":"duel"}`,
			`{"type":"join","queue":"ranked","admin":true}`, `{"type":"cancel","ticketId":"x","queue":"duel"}`,
			`{"type":"join","queue":"ranked","attributes":{"a":{"b":1}}}`, "{\"type\":\"ping\",\"id\":\"\xff\"}",
			`{"type":"join","queue":"ranked"}{"type":"join","queue":"duel"}`, strings.Repeat("{", 3000),
		} {
			if err := c.conn.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
				t.Fatal(err)
			}
			if code := expectError(t, c, 5*time.Second); code != "BAD_REQUEST" {
				t.Errorf("%.40q: %s", raw, code)
			}
		}
		if err := c.conn.Write(ctx, websocket.MessageBinary, []byte{0x81, 0x00, 0xff}); err != nil {
			t.Fatal(err)
		}
		if code := expectError(t, c, 5*time.Second); code != "BAD_REQUEST" {
			t.Errorf("binary: %s", code)
		}
		c.send(map[string]any{"type": "ping", "id": "alive"})
		if f := c.expect("pong", 5*time.Second); f.Re != "alive" {
			t.Fatalf("pong %s", f.raw)
		}
	})

	t.Run("oversized frame", func(t *testing.T) {
		c := h.dialFrom(h.guestFrom("203.0.113.4", true), "203.0.113.4")
		c.expect("hello", 5*time.Second)
		_ = c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ping","id":"`+strings.Repeat("x", 5000)+`"}`))
		select {
		case <-c.closed:
		case <-time.After(5 * time.Second):
			t.Fatal("oversized frame did not close the socket")
		}
		h.eventually("1009 recorded", 5*time.Second, func() bool {
			return h.metric(`matchgate_ws_connections_closed_total{code="1009"}`) >= 1
		})
	})

	t.Run("injection in every string field", func(t *testing.T) {
		g := h.guestFrom("203.0.113.5", true)
		c := h.dialFrom(g, "203.0.113.5")
		c.expect("hello", 5*time.Second)
		// Printable strings within the limits are data: an attribute holding
		// SQL is stored as a parameter, never as SQL text. Names and ids
		// are refused before any key or query is built.
		attrOK := func(s string, max int) bool {
			return utf8.ValidString(s) && utf8.RuneCountInString(s) <= max && !strings.ContainsFunc(s, unicode.IsControl)
		}
		joinAccepted := func(st int, b []byte) {
			if st == 202 || strings.Contains(string(b), `"type":"joined"`) {
				h.accept(g.UserID)
				var tb struct{ Ticket matcher.Ticket }
				if json.Unmarshal(b, &tb) == nil && tb.Ticket.ID != "" {
					_, _, _ = h.do("DELETE", "/v1/tickets/"+tb.Ticket.ID, g.Token, "203.0.113.5", "")
				}
			}
		}
		seq := 0
		wsReply := func(f map[string]any) frame {
			t.Helper()
			seq++
			id := fmt.Sprint("q", seq)
			if _, ok := f["id"]; !ok {
				f["id"] = id
			} else {
				id, _ = f["id"].(string)
				if len(id) > 64 {
					id = ""
				}
			}
			time.Sleep(55 * time.Millisecond) // under --limit-messages 20/1s
			c.send(f)
			return reply(t, c, id, 5*time.Second)
		}
		for _, s := range injections {
			q := url.PathEscape(s)
			body, _ := json.Marshal(map[string]any{"region": s})
			if st, _, b := h.do("POST", "/v1/queues/"+q+"/tickets", g.Token, "203.0.113.5", `{}`); st != 400 && st != 404 {
				t.Errorf("queue %q: %d %s", s, st, b)
			}
			if st, _, b := h.do("POST", "/v1/queues/ranked/tickets", g.Token, "203.0.113.5", string(body)); st != 400 {
				t.Errorf("region %q: %d %s", s, st, b)
			}
			attrs, _ := json.Marshal(map[string]any{"region": "eu", "attributes": map[string]string{s: s}})
			st, _, b := h.do("POST", "/v1/queues/ranked/tickets", g.Token, "203.0.113.5", string(attrs))
			if attrOK(s, 32) != (st != 400) {
				t.Errorf("attributes %q: %d %s", s, st, b)
			}
			joinAccepted(st, b)
			for _, p := range []string{"/v1/tickets/" + q, "/v1/tickets/" + q + "/heartbeat", "/v1/matches/" + q + "/accept"} {
				method := map[bool]string{true: "PUT", false: "GET"}[strings.HasSuffix(p, "heartbeat")]
				if strings.HasSuffix(p, "accept") {
					method = "POST"
				}
				reqID := s // Go's client refuses to send control characters in a header
				if strings.ContainsFunc(s, unicode.IsControl) {
					reqID = strings.Map(func(r rune) rune { return map[bool]rune{true: -1, false: r}[unicode.IsControl(r)] }, s)
				}
				if st, _, b := h.do(method, p, g.Token, "203.0.113.5", "", "X-Request-Id", reqID); st != 404 && st != 400 {
					t.Errorf("%s %q: %d %s", method, p, st, b)
				}
			}
			name, _ := json.Marshal(map[string]any{"name": s})
			if st, _, b := h.do("POST", "/v1/auth/guest", "", "203.0.113.6", string(name)); st != 400 && st != 200 {
				t.Errorf("guest name %q: %d %s", s, st, b)
			}
			for _, f := range []map[string]any{
				{"type": "join", "queue": s},
				{"type": "join", "queue": "ranked", "region": s},
				{"type": "cancel", "ticketId": s},
				{"type": "accept", "matchId": s},
				{"type": "decline", "matchId": s},
			} {
				if r := wsReply(f); r.Type != "error" || (r.Error.Code != "BAD_REQUEST" && r.Error.Code != "UNKNOWN_QUEUE" && r.Error.Code != "NOT_FOUND") {
					t.Errorf("%v: %s", f, r.raw)
				}
			}
			r := wsReply(map[string]any{"type": "join", "queue": "ranked", "region": "eu", "attributes": map[string]string{"k": s}})
			if attrOK(s, 64) != (r.Type != "error" || r.Error.Code != "BAD_REQUEST") {
				t.Errorf("attribute %q over the socket: %s", s, r.raw)
			}
			joinAccepted(0, r.raw)
			// The request id is the client's own, echoed as JSON.
			if r := wsReply(map[string]any{"type": "ping", "id": s}); (len(s) <= 64) != (r.Type == "pong") {
				t.Errorf("ping with id %q: %s", s, r.raw)
			}
			// The admin API with a valid admin token: queues named like this,
			// or with such regions, are refused.
			cfg, _ := json.Marshal(map[string]any{"players": 2, "regions": []string{s}})
			if st, _, b := h.do("PUT", "/v1/admin/queues/"+q, hostileAdminToken, "203.0.113.7", `{"players":2}`); st != 400 && st != 404 {
				t.Errorf("admin queue %q: %d %s", s, st, b)
			}
			if st, _, b := h.do("PUT", "/v1/admin/queues/arena", hostileAdminToken, "203.0.113.7", string(cfg)); st != 400 {
				t.Errorf("admin queue region %q: %d %s", s, st, b)
			}
		}
		// A trusted backend's token whose subject is an injection: stored
		// verbatim (parameters, never SQL text), then cancelled.
		sub := injections[0]
		tok, err := gateway.MintToken([]byte(testSecret), sub, nil, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		h.noteToken(tok)
		h.mu.Lock()
		h.attacker[sub] = true
		h.mu.Unlock()
		st, _, b := h.do("POST", "/v1/queues/ranked/tickets", tok, "203.0.113.8", `{"region":"na"}`)
		if st != 202 {
			t.Fatalf("join with an injection subject: %d %s", st, b)
		}
		h.accept(sub)
		var tb struct{ Ticket matcher.Ticket }
		_ = json.Unmarshal(b, &tb)
		if st, _, b := h.do("DELETE", "/v1/tickets/"+tb.Ticket.ID, tok, "203.0.113.8", ""); st != 200 {
			t.Fatalf("cancel: %d %s", st, b)
		}
		// Bans of such a user id are stored verbatim too, and lifted.
		if st, _, b := h.do("PUT", "/v1/admin/bans/"+url.PathEscape(sub), hostileAdminToken, "203.0.113.7", `{"reason":"`+"x"+`"}`); st != 200 {
			t.Fatalf("ban: %d %s", st, b)
		}
		if st, _, b := h.do("DELETE", "/v1/admin/bans/"+url.PathEscape(sub), hostileAdminToken, "203.0.113.7", ""); st != 204 {
			t.Fatalf("unban: %d %s", st, b)
		}
	})

	t.Run("join floods", func(t *testing.T) {
		// One user: 5 joins a minute.
		g := h.guestFrom("203.0.113.10", true)
		codes := map[int]int{}
		for range 12 {
			st, hdr, _ := h.do("POST", "/v1/queues/ranked/tickets", g.Token, "203.0.113.10", `{"region":"eu"}`)
			codes[st]++
			if st == 202 {
				h.accept(g.UserID)
			}
			if st == 429 && hdr.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		}
		if codes[202] != 1 || codes[409] != 4 || codes[429] != 7 {
			t.Errorf("one user's join flood: %v, want 1×202, 4×409, 7×429", codes)
		}
		// Many users from one address: 30 joins a minute.
		codes = map[int]int{}
		for range 8 {
			u := h.guestFrom("203.0.113.11", true)
			for range 5 {
				st, _, _ := h.do("POST", "/v1/queues/ranked/tickets", u.Token, "203.0.113.11", `{"region":"na"}`)
				codes[st]++
				if st == 202 {
					h.accept(u.UserID)
				}
			}
		}
		if codes[429] != 10 || codes[202]+codes[409] != 30 {
			t.Errorf("one address's join flood: %v, want 30 through and 10×429", codes)
		}
		// Over a socket, joins and messages: frames beyond 20/s are
		// dropped, then the socket is closed with 4429.
		c := h.dialFrom(h.guestFrom("203.0.113.12", true), "203.0.113.12")
		c.expect("hello", 5*time.Second)
		go func() {
			for i := range 400 {
				b, _ := json.Marshal(map[string]any{"type": "join", "id": fmt.Sprint(i), "queue": "chat-pairs"})
				if c.conn.Write(ctx, websocket.MessageText, b) != nil {
					return
				}
			}
		}()
		select {
		case <-c.closed:
		case <-time.After(10 * time.Second):
			t.Fatal("a flooding socket was not closed")
		}
		floodUser = c.g
		h.eventually("4429 recorded", 5*time.Second, func() bool {
			return h.metric(`matchgate_ws_connections_closed_total{code="4429"}`) >= 1
		})
	})

	t.Run("join and cancel floods", func(t *testing.T) {
		// One user, 50 joins and cancels in 2 s, over REST and then over a
		// socket: past the bursts (joins: --limit-joins-user 5/1m here;
		// cancels: the default, 5 at once, one a second) every request is
		// refused with RATE_LIMITED and a Retry-After.
		g := h.guestFrom("203.0.113.40", true)
		allowed, refused := map[string]int{}, map[string]int{}
		ticket := "00000000-0000-0000-0000-000000000000"
		for i := range 50 {
			method, path, body, kind := "POST", "/v1/queues/ranked/tickets", `{"region":"eu"}`, "join"
			if i%2 == 1 {
				method, path, body, kind = "DELETE", "/v1/tickets/"+ticket, "", "cancel"
			}
			st, hdr, b := h.do(method, path, g.Token, "203.0.113.40", body)
			switch {
			case st == 202:
				h.accept(g.UserID)
				var tb struct{ Ticket matcher.Ticket }
				if err := json.Unmarshal(b, &tb); err != nil {
					t.Fatal(err)
				}
				ticket = tb.Ticket.ID
				allowed[kind]++
			case st == 429:
				if hdr.Get("Retry-After") == "" || !strings.Contains(string(b), "RATE_LIMITED") {
					t.Errorf("%s refused without RATE_LIMITED and Retry-After: %v %s", kind, hdr, b)
				}
				refused[kind]++
			case kind == "cancel":
				allowed[kind]++ // cancelled, or already resolved: served either way
			}
			time.Sleep(40 * time.Millisecond)
		}
		if allowed["join"] > 5 || refused["join"] == 0 || allowed["cancel"] > 5+3 || refused["cancel"] == 0 {
			t.Errorf("REST flood: allowed %v, refused %v", allowed, refused)
		}

		c := h.dialFrom(h.guestFrom("203.0.113.41", true), "203.0.113.41")
		c.expect("hello", 5*time.Second)
		allowed, refused = map[string]int{}, map[string]int{}
		for i := range 50 {
			cmd, kind := map[string]any{"type": "join", "id": fmt.Sprint(i), "queue": "ranked", "region": "eu"}, "join"
			if i%2 == 1 {
				cmd, kind = map[string]any{"type": "cancel", "id": fmt.Sprint(i), "ticketId": ticket}, "cancel"
			}
			c.send(cmd)
			f := reply(t, c, fmt.Sprint(i), 5*time.Second)
			switch {
			case f.Type == "joined":
				h.accept(c.g.UserID)
				ticket = decode[struct{ Ticket matcher.Ticket }](t, f).Ticket.ID
				allowed[kind]++
			case f.Type == "error" && f.Error.Code == "RATE_LIMITED":
				if e := decode[struct{ Error struct{ RetryAfter int } }](t, f); e.Error.RetryAfter < 1 {
					t.Errorf("RATE_LIMITED without retryAfter: %s", f.raw)
				}
				refused[kind]++
			case kind == "cancel":
				allowed[kind]++
			}
			time.Sleep(40 * time.Millisecond)
		}
		if allowed["join"] > 5 || refused["join"] == 0 || allowed["cancel"] > 5+3 || refused["cancel"] == 0 {
			t.Errorf("WebSocket flood: allowed %v, refused %v", allowed, refused)
		}
		c.send(map[string]any{"type": "ping", "id": "after-flood"})
		c.expect("pong", 5*time.Second)
	})

	t.Run("connect floods", func(t *testing.T) {
		// Each attempt as another user (a trusted backend's tokens), so that
		// only the per-address limit is in play.
		minted := func(i int) string {
			tok, err := gateway.MintToken([]byte(testSecret), fmt.Sprint("flood-", i), nil, time.Hour, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			h.noteToken(tok)
			return tok
		}
		refused := 0
		for i := range 40 {
			c, err := h.tryDialFrom(minted(i), "203.0.113.21", nil)
			switch {
			case err == nil:
				_ = c.CloseNow()
			case strings.Contains(err.Error(), "status 429"):
				refused++
			default:
				t.Fatalf("connect: %v", err)
			}
		}
		if refused != 10 {
			t.Errorf("%d of 40 connects from one address refused, want 10", refused)
		}
		// X-Forwarded-For from a peer that is not a trusted proxy is not
		// believed: 127.0.0.2 is limited as itself.
		spoofer := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
			LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
		limited := 0
		for i := range 35 {
			c, err := h.tryDialFrom(minted(100+i), fmt.Sprintf("198.51.100.%d", i), spoofer)
			if err == nil {
				_ = c.CloseNow()
			} else if strings.Contains(err.Error(), "status 429") {
				limited++
			}
		}
		if limited != 5 {
			t.Errorf("spoofing peer: %d of 35 refused, want 5", limited)
		}
		// One user's sockets: at most 4.
		u := h.guestFrom("203.0.113.22", true)
		var open []*websocket.Conn
		for range 4 {
			c, err := h.tryDialFrom(u.Token, "203.0.113.22", nil)
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, c)
		}
		if _, err := h.tryDialFrom(u.Token, "203.0.113.22", nil); err == nil || !strings.Contains(err.Error(), "status 429") {
			t.Errorf("5th socket of one user: %v", err)
		}
		for _, c := range open {
			_ = c.CloseNow()
		}
		// Headers too large.
		if st, _, _ := h.do("GET", "/healthz", "", "", "", "X-Big", strings.Repeat("b", 32<<10)); st != 431 {
			t.Errorf("32 KiB header: %d", st)
		}
	})

	t.Run("slow reader and silent peer", func(t *testing.T) {
		// A reader that never drains while its channel is flooded: dropped
		// (send queue overflow or ping timeout), nobody else waits on it.
		slow := h.guestFrom("203.0.113.30", true)
		conn, err := h.tryDialFrom(slow.Token, "203.0.113.30", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		rdb := redistest.Real(t)
		h.eventually("slow socket subscribed", 5*time.Second, func() bool {
			n, _ := rdb.PubSubNumSub(ctx, notify.Channel(prefix, slow.UserID)).Result()
			return n[notify.Channel(prefix, slow.UserID)] > 0
		})
		big := []byte(`{"type":"ticket.update","pad":"` + strings.Repeat("x", 64<<10) + `"}`)
		before := h.metric("matchgate_ws_send_queue_overflows_total") + h.metric(`matchgate_ws_connections_closed_total{code="4408"}`)
		for range 400 {
			if err := rdb.Publish(ctx, notify.Channel(prefix, slow.UserID), big).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// A peer that completes the handshake and then never reads nor
		// answers a ping.
		raw, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		silent := h.guestFrom("203.0.113.31", true)
		fmt.Fprintf(raw, "GET /v1/ws?token=%s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-Forwarded-For: 203.0.113.31\r\n\r\n", url.QueryEscape(silent.Token))
		status, _ := bufio.NewReader(raw).ReadString('\n')
		if !strings.Contains(status, "101") {
			t.Fatalf("silent peer's upgrade: %q", status)
		}
		h.eventually("the slow and the silent sockets dropped", 15*time.Second, func() bool {
			return h.metric("matchgate_ws_send_queue_overflows_total")+h.metric(`matchgate_ws_connections_closed_total{code="4408"}`) >= before+2
		})
	})

	// Honest players join while the floods' limits are still in force, and
	// are matched with each other at once.
	joinHonest(honest[4:])
	awaitHonest(honest[4:])
	attacks.Wait()

	// After it all: ready, honest players matched with honest players and
	// agreeing with the record, no honest socket closed.
	if st, _, b := h.do("GET", "/readyz", "", "", ""); st != 200 {
		t.Fatalf("readyz after the attacks: %d %s", st, b)
	}
	for _, c := range honest {
		m := matches[c.g.UserID]
		if len(m.Players) != 2 {
			t.Fatalf("%s: match %+v", c.g.UserID, m)
		}
		for _, p := range m.Players {
			if h.attacker[p.UserID] || matches[p.UserID].ID != m.ID {
				t.Fatalf("%s matched with %s (%s)", c.g.UserID, p.UserID, m.ID)
			}
		}
		v := getTicket(t, base, c.g, tickets[c.g.UserID].ID)
		if v.Ticket.Status != matcher.StatusMatched || v.Ticket.MatchID != m.ID {
			t.Fatalf("%s: record %+v, pushed %s", c.g.UserID, v.Ticket, m.ID)
		}
		select {
		case <-c.closed:
			t.Fatalf("honest socket of %s was closed", c.g.UserID)
		default:
		}
		c.send(map[string]any{"type": "ping", "id": "end"})
		c.expect("pong", 5*time.Second)
	}
	after := getTicket(t, base, victim.g, victimTicket.Ticket.ID)
	if after.Ticket.Version != victimTicket.Ticket.Version || after.Ticket.Status != victimTicket.Ticket.Status {
		t.Fatalf("the victim's ticket changed: %+v → %+v", victimTicket.Ticket, after.Ticket)
	}

	// The flooding socket was closed mid-flood: a join may have run without
	// its reply getting out (in-flight commands finish). What the server
	// accepted is what the user is told on reconnecting: at most one
	// waiting ticket.
	if floodUser.UserID != "" {
		back := h.dialFrom(floodUser, "203.0.113.12")
		hello := decode[helloFrame](t, back.expect("hello", 5*time.Second))
		if len(hello.Tickets) > 1 {
			t.Fatalf("the flooding user holds %d tickets", len(hello.Tickets))
		}
		for range hello.Tickets {
			h.accept(floodUser.UserID)
		}
	}

	// The record: exactly the accepted joins, nothing else.
	rows, err := db.Query(ctx, `SELECT user_id, queue, region, count(*) FROM tickets GROUP BY 1, 2, 3`)
	if err != nil {
		t.Fatal(err)
	}
	perUser := map[string]int{}
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,47}$`)
	for rows.Next() {
		var user, queue, region string
		var n int
		if err := rows.Scan(&user, &queue, &region, &n); err != nil {
			t.Fatal(err)
		}
		if !valid.MatchString(queue) || !valid.MatchString(region) || !slices.Contains([]string{"duel", "ranked", "chat-pairs", "chat-topic-42"}, queue) {
			t.Errorf("a ticket in queue %q region %q", queue, region)
		}
		perUser[user] += n
	}
	rows.Close()
	for u, n := range perUser {
		if h.accepted[u] != n {
			t.Errorf("%s (from %q): %d tickets in the record, %d joins accepted", u, h.from[u], n, h.accepted[u])
		}
	}
	for u, n := range h.accepted {
		if perUser[u] != n {
			t.Errorf("%s (from %q): %d joins accepted, %d tickets in the record", u, h.from[u], n, perUser[u])
		}
	}
	var bans, queueConfigs int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM bans), (SELECT count(*) FROM queue_configs)`).Scan(&bans, &queueConfigs); err != nil {
		t.Fatal(err)
	}
	if bans != 0 || queueConfigs != 0 {
		t.Errorf("bans %d, queue_configs %d after only refused or undone admin requests", bans, queueConfigs)
	}
	var honestMatches int
	ids := []string{}
	for _, m := range matches {
		if !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM matches WHERE id::text = ANY ($1)`, ids).Scan(&honestMatches); err != nil || honestMatches != 4 {
		t.Errorf("honest matches in the record: %d %v", honestMatches, err)
	}

	// The log: no token, no panic, no internal error.
	out := logs.String()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, tok := range h.tokens {
		for _, part := range strings.Split(tok, ".") {
			if len(part) > 16 && strings.Contains(out, part) {
				t.Fatalf("a token part reached the log")
			}
		}
	}
	for _, bad := range []string{`msg="handler panic"`, `msg="request failed"`, `msg="command failed"`, "level=ERROR"} {
		if strings.Contains(out, bad) {
			t.Errorf("the log has %q", bad)
		}
	}
	for _, reason := range []string{"join_user", "join_ip", "connect_ip", "messages", "user_sockets"} {
		if h.metric(`matchgate_refusals_total{reason="`+reason+`"}`) == 0 {
			t.Errorf("no refusal counted for %s", reason)
		}
	}
}

// TestHelloIsBounded: a user with hundreds of resolved tickets in the
// history window gets a hello of a bounded size that says more exist, and
// GET /v1/tickets pages through the rest.
func TestHelloIsBounded(t *testing.T) {
	base := startServer(t, "--limit-joins-user", "off", "--limit-cancels-user", "off", "--limit-reads-user", "off")
	g := newGuest(t, base, 1500)
	h := &hostile{t: t, base: base}
	const resolved = 300
	for range resolved {
		st, _, b := h.do("POST", "/v1/queues/ranked/tickets", g.Token, "", `{"region":"eu"}`)
		var tb struct{ Ticket matcher.Ticket }
		if st != 202 || json.Unmarshal(b, &tb) != nil {
			t.Fatalf("join: %d %s", st, b)
		}
		if st, _, b := h.do("DELETE", "/v1/tickets/"+tb.Ticket.ID, g.Token, "", ""); st != 200 {
			t.Fatalf("cancel: %d %s", st, b)
		}
	}
	c := dial(t, base, g)
	f := c.expect("hello", 5*time.Second)
	hello := decode[struct {
		Tickets []matcher.Ticket
		More    bool
		Next    string
	}](t, f)
	if len(f.raw) > 16<<10 || len(hello.Tickets) != 10 || !hello.More || hello.Next == "" {
		t.Fatalf("hello of %d bytes with %d tickets, more %v", len(f.raw), len(hello.Tickets), hello.More)
	}
	seen := map[string]bool{}
	for _, tk := range hello.Tickets {
		seen[tk.ID] = true
	}
	next := hello.Next
	for pages := 0; next != ""; pages++ {
		if pages > resolved {
			t.Fatal("paging does not end")
		}
		st, _, b := h.do("GET", "/v1/tickets?limit=100&before="+url.QueryEscape(next), g.Token, "", "")
		var page struct {
			Tickets []matcher.Ticket
			More    bool
			Next    string
		}
		if st != 200 || json.Unmarshal(b, &page) != nil || len(page.Tickets) > 100 {
			t.Fatalf("page: %d %.300s", st, b)
		}
		for _, tk := range page.Tickets {
			if seen[tk.ID] {
				t.Fatalf("ticket %s on two pages", tk.ID)
			}
			seen[tk.ID] = true
		}
		next = page.Next
	}
	if len(seen) != resolved {
		t.Fatalf("hello and pages hold %d tickets, want %d", len(seen), resolved)
	}
}
