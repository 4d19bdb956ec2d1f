package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/control"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// fakeAdminForValidation satisfies Admin for configuration checks.
type fakeAdminForValidation struct{ *control.Admin }

var adminToken = strings.Repeat("adm1n-", 8)

// adminEnv is a gateway whose admin API is backed by control.Admin on
// miniredis, with the control channel wired as the composition root does.
type adminEnv struct {
	*testEnv
	list *control.BanList
}

func startAdminServer(t *testing.T) *adminEnv {
	t.Helper()
	rdb := redistest.Mini(t)
	bus, err := control.NewBus(control.BusConfig{Redis: rdb, Prefix: "gw"})
	if err != nil {
		t.Fatal(err)
	}
	bans := control.NewRedisBans(rdb, "gw")
	list, _ := control.NewBanList(control.BanListConfig{Store: bans})
	admin, err := control.NewAdmin(control.AdminConfig{Bans: bans, List: list, Queues: control.NewRedisQueues(rdb, "gw"),
		Base: matcher.DemoConfig(), Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	env := startServer(t, Config{Node: "node-a", AdminTokens: []string{"another-token-that-is-long-enough-000", adminToken}, Admin: admin, Bans: list})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- bus.Run(ctx, func(m control.Message) {
			switch m.Op {
			case control.OpBan:
				list.Apply(*m.Ban)
				env.srv.DisconnectUser(m.User, CloseBanned, "banned")
			case control.OpUnban:
				list.Lift(m.User)
			case control.OpDisconnect:
				env.srv.DisconnectUser(m.User, CloseDisconnected, "disconnected by an operator")
			case control.OpDrain:
				if m.Node == "node-a" {
					env.srv.Drain()
				}
			}
		}, ready)
	}()
	<-ready
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &adminEnv{testEnv: env, list: list}
}

func (e *adminEnv) admin(t *testing.T, method, path, token, body string) response {
	t.Helper()
	return (&restEnv{srv: e.srv, mm: e.mm, url: e.base}).do(t, method, path, token, body)
}

func TestAdminAuth(t *testing.T) {
	off := newRESTEnv(t, Config{})
	if r := off.do(t, "GET", "/v1/admin/bans", adminToken, ""); r.status != 404 {
		t.Fatalf("admin API without tokens: %d %s", r.status, r.body)
	}
	e := startAdminServer(t)
	for name, tok := range map[string]string{
		"none":         "",
		"player token": mustToken(t, "alice", nil),
		"prefix":       adminToken[:len(adminToken)-1],
		"longer":       adminToken + "x",
	} {
		if r := e.admin(t, "PUT", "/v1/admin/bans/alice", tok, `{}`); r.status != 401 || r.errorCode() != "UNAUTHORIZED" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if e.list.Banned("alice") {
		t.Fatal("an unauthenticated ban went through")
	}
	for _, tok := range []string{adminToken, "another-token-that-is-long-enough-000"} {
		if r := e.admin(t, "GET", "/v1/admin/bans", tok, ""); r.status != 200 || string(r.body) != `{"bans":[]}`+"\n" {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
	}
}

func TestAdminBan(t *testing.T) {
	e := startAdminServer(t)
	e.mm.userState = func(_ context.Context, userID string) (matcher.UserState, error) {
		return matcher.UserState{Tickets: []matcher.Ticket{
			{ID: "t-wait", UserID: userID, Status: matcher.StatusWaiting},
			{ID: "t-old", UserID: userID, Status: matcher.StatusMatched},
		}}, nil
	}
	c := dial(t, e.wsURL(), mustToken(t, "mallory", nil))
	readFrame(t, c)
	other := dial(t, e.wsURL(), mustToken(t, "alice", nil))
	readFrame(t, other)

	for name, body := range map[string]string{
		"both":          `{"duration":"1h","until":"2099-01-01T00:00:00Z"}`,
		"bad duration":  `{"duration":"forever"}`,
		"past":          `{"until":"2001-01-01T00:00:00Z"}`,
		"unknown field": `{"reason":"x","permanent":true}`,
		"long reason":   `{"reason":"` + strings.Repeat("r", 300) + `"}`,
	} {
		if r := e.admin(t, "PUT", "/v1/admin/bans/mallory", adminToken, body); r.status != 400 {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	r := e.admin(t, "PUT", "/v1/admin/bans/mallory", adminToken, `{"reason":"cheating","duration":"72h"}`)
	var out struct {
		Ban              control.Ban `json:"ban"`
		CancelledTickets []string    `json:"cancelledTickets"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || r.status != 200 || out.Ban.UserID != "mallory" || out.Ban.Until == nil ||
		out.Ban.Until.Before(time.Now().Add(71*time.Hour)) || len(out.CancelledTickets) != 1 || out.CancelledTickets[0] != "t-wait" {
		t.Fatalf("ban: %d %s", r.status, r.body)
	}
	if code := waitCloseStatus(t, c); code != CloseBanned {
		t.Fatalf("banned socket closed with %v, want 4403", code)
	}
	var de *dialError
	if _, err := tryDial(e.wsURL(), mustToken(t, "mallory", nil), nil); err == nil || !asDialError(err, &de) || de.status != 403 {
		t.Fatalf("banned reconnect: %v", err)
	}
	writeJSONFrame(t, other, map[string]any{"type": "ping", "id": "still"})
	if f := readFrame(t, other); f.Type != "pong" {
		t.Fatalf("another user's socket: %s", f.raw)
	}
	if r := e.admin(t, "GET", "/v1/admin/bans", adminToken, ""); r.status != 200 || !strings.Contains(string(r.body), `"reason":"cheating"`) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if r := e.admin(t, "DELETE", "/v1/admin/bans/mallory", adminToken, ""); r.status != 204 {
		t.Fatalf("unban: %d %s", r.status, r.body)
	}
	if r := e.admin(t, "DELETE", "/v1/admin/bans/mallory", adminToken, ""); r.status != 404 {
		t.Fatalf("unban again: %d %s", r.status, r.body)
	}
	c2, err := tryDial(e.wsURL(), mustToken(t, "mallory", nil), nil)
	if err != nil {
		t.Fatalf("after unban: %v", err)
	}
	readFrame(t, c2)
	_ = c2.CloseNow()
}

func TestAdminDisconnectAndDrain(t *testing.T) {
	e := startAdminServer(t)
	a1 := dial(t, e.wsURL(), mustToken(t, "alice", nil))
	readFrame(t, a1)
	a2 := dial(t, e.wsURL(), mustToken(t, "alice", nil))
	readFrame(t, a2)
	bob := dial(t, e.wsURL(), mustToken(t, "bob", nil))
	readFrame(t, bob)
	if r := e.admin(t, "POST", "/v1/admin/users/alice/disconnect", adminToken, ""); r.status != 202 {
		t.Fatalf("disconnect: %d %s", r.status, r.body)
	}
	if code := waitCloseStatus(t, a1); code != CloseDisconnected {
		t.Fatalf("alice's 1st socket: %v", code)
	}
	if code := waitCloseStatus(t, a2); code != CloseDisconnected {
		t.Fatalf("alice's 2nd socket: %v", code)
	}
	// Another node's name: nothing happens here.
	if r := e.admin(t, "POST", "/v1/admin/nodes/node-b/drain", adminToken, ""); r.status != 202 {
		t.Fatalf("drain node-b: %d %s", r.status, r.body)
	}
	writeJSONFrame(t, bob, map[string]any{"type": "ping", "id": "1"})
	if f := readFrame(t, bob); f.Type != "pong" {
		t.Fatalf("bob after another node's drain: %s", f.raw)
	}
	if r := e.admin(t, "POST", "/v1/admin/nodes/node-a/drain", adminToken, ""); r.status != 202 {
		t.Fatalf("drain node-a: %d %s", r.status, r.body)
	}
	if code := waitCloseStatus(t, bob); code != CloseGoingAway {
		t.Fatalf("bob on the drained node: %v", code)
	}
	if r := e.admin(t, "GET", "/readyz", "", ""); r.status != 503 {
		t.Fatalf("readyz: %d", r.status)
	}
}

func TestAdminQueues(t *testing.T) {
	e := startAdminServer(t)
	r := e.admin(t, "PUT", "/v1/admin/queues/arena", adminToken, `{"kind":"room","players":6,"minPlayers":3,"fallbackAfter":"30s"}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"name":"arena"`) || !strings.Contains(string(r.body), `"version":1`) {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	for name, c := range map[string][2]string{
		"invalid":        {"arena", `{"players":1}`},
		"unknown field":  {"arena", `{"player":6}`},
		"duplicate key":  {"arena", `{"players":6,"players":2}`},
		"bad name":       {"Arena'--", `{}`},
		"another's name": {"arena", `{"name":"duel"}`},
		"empty body":     {"arena", ``},
		"not an object":  {"arena", `[]`},
	} {
		if r := e.admin(t, "PUT", "/v1/admin/queues/"+c[0], adminToken, c[1]); r.status != 400 {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if r := e.admin(t, "DELETE", "/v1/admin/queues/duel", adminToken, ""); r.status != 200 || !strings.Contains(string(r.body), `"retired":true`) {
		t.Fatalf("retire: %d %s", r.status, r.body)
	}
	if r := e.admin(t, "DELETE", "/v1/admin/queues/nope", adminToken, ""); r.status != 404 {
		t.Fatalf("retire unknown: %d %s", r.status, r.body)
	}
	r = e.admin(t, "GET", "/v1/admin/queues", adminToken, "")
	var v control.QueuesView
	if err := json.Unmarshal(r.body, &v); err != nil || r.status != 200 || strings.Join(v.Effective, ",") != "ranked,chat-topic-42,chat-pairs,advice,arena" || len(v.Overrides) != 2 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
}

func asDialError(err error, de **dialError) bool {
	d, ok := err.(*dialError)
	if ok {
		*de = d
	}
	return ok
}
