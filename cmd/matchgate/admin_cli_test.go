package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/gateway"
)

// The admin subcommand against the real server: every verb is run as an
// operator would, and what it prints and what it changed in the server
// are both checked.

// adminCLIServer serves a matched queue, an admission queue, a provider
// queue and a ranking board, with the admin API on, as node cli-node.
func adminCLIServer(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - {name: duel, players: 2}
  - {name: launch, kind: admission, rate: 5, tokenTTL: 1m}
  - name: advice
    kind: provider
    acceptWindow: 15s
    weights: {specialty: 2, rating: 1, load: 1, wait: 1}
rankings:
  - name: products
    source: events
    metrics: {views: {weight: 1}, likes: {weight: 3}, sales: {weight: 5, transform: log1p}}
    top: 10
    refresh: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, "--config", cfg, "--secret", providerSecret, "--admin-token", admissionAdmin,
		"--node", "cli-node", "--limit-reads-user", "off")
}

// runAdmin runs "matchgate admin args..." with the environment env and
// returns what it printed on stdout and stderr.
func runAdmin(env map[string]string, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"admin"}, args...), func(k string) string { return env[k] }, &out, &errOut, nil)
	return out.String(), errOut.String(), err
}

// admin runs a verb against base with the admin token and fails the test
// if it fails.
func admin(t *testing.T, base string, args ...string) string {
	t.Helper()
	out, stderr, err := runAdmin(nil, append([]string{"--url", base, "--admin-token", admissionAdmin}, args...)...)
	if err != nil {
		t.Fatalf("admin %v: %v\n%s%s", args, err, out, stderr)
	}
	return out
}

// adminFails runs a verb that must fail and returns its error's text.
func adminFails(t *testing.T, base string, args ...string) string {
	t.Helper()
	out, _, err := runAdmin(nil, append([]string{"--url", base, "--admin-token", admissionAdmin}, args...)...)
	if err == nil {
		t.Fatalf("admin %v succeeded: %s", args, out)
	}
	return err.Error()
}

// dialErr dials the socket with tok: the connection, or the handshake's error.
func dialErr(base, tok string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := strings.Replace(base, "http", "ws", 1) + "/v1/ws?token=" + url.QueryEscape(tok)
	c, _, err := websocket.Dial(ctx, u, nil)
	return c, err
}

// closeStatus reads c until it closes and returns the close code.
func closeStatus(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func publicQueues(t *testing.T, base string) map[string]map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/v1/queues")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Queues []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("queues: %d %v", resp.StatusCode, err)
	}
	m := map[string]map[string]any{}
	for _, q := range body.Queues {
		m[q["name"].(string)] = q
	}
	return m
}

func readyz(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAdminCLI(t *testing.T) {
	base := adminCLIServer(t)

	t.Run("bans", func(t *testing.T) {
		g := newGuest(t, base, 1500)
		out := admin(t, base, "ban", g.UserID, "--reason", "cheating at cards", "--for", "1h")
		if !regexp.MustCompile(`^banned ` + regexp.QuoteMeta(g.UserID) + ` until \d{4}-\d\d-\d\dT`).MatchString(out) {
			t.Fatalf("ban printed %q", out)
		}
		if _, err := dialErr(base, g.Token); err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("a banned user's connect: %v", err)
		}
		out = admin(t, base, "bans")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "USER") || !strings.HasPrefix(lines[1], g.UserID+" ") ||
			!strings.HasSuffix(lines[1], "cheating at cards") {
			t.Fatalf("bans printed:\n%s", out)
		}
		// The columns are aligned: REASON starts where the reason does.
		if strings.Index(lines[0], "REASON") != strings.Index(lines[1], "cheating") {
			t.Fatalf("bans not aligned:\n%s", out)
		}
		var v struct {
			Bans []struct {
				UserID string
				Until  *time.Time
			}
		}
		if err := json.Unmarshal([]byte(admin(t, base, "bans", "--json")), &v); err != nil || len(v.Bans) != 1 ||
			v.Bans[0].UserID != g.UserID || v.Bans[0].Until == nil {
			t.Fatalf("bans --json: %+v %v", v, err)
		}
		if out := admin(t, base, "unban", g.UserID); out != "lifted the ban of "+g.UserID+"\n" {
			t.Fatalf("unban printed %q", out)
		}
		c, err := dialErr(base, g.Token)
		if err != nil {
			t.Fatalf("the unbanned user's connect: %v", err)
		}
		c.Close(websocket.StatusNormalClosure, "")
		if out := admin(t, base, "bans"); out != "no bans in force\n" {
			t.Fatalf("bans after the unban: %q", out)
		}
		if msg := adminFails(t, base, "unban", g.UserID); !strings.Contains(msg, "404 NOT_FOUND") {
			t.Fatalf("a second unban: %s", msg)
		}
		// --json prints the server's answer; a ban until lifted.
		var b struct {
			Ban struct {
				UserID string
				Until  *time.Time
			}
			CancelledTickets []string
		}
		if err := json.Unmarshal([]byte(admin(t, base, "--json", "ban", g.UserID)), &b); err != nil ||
			b.Ban.UserID != g.UserID || b.Ban.Until != nil || b.CancelledTickets == nil {
			t.Fatalf("ban --json: %+v %v", b, err)
		}
		until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
		if out := admin(t, base, "ban", g.UserID, "--until", until); out != "banned "+g.UserID+" until "+until+"\n" {
			t.Fatalf("ban --until printed %q", out)
		}
		if out := admin(t, base, "bans"); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(g.UserID) + ` +` + until + ` `).MatchString(out) {
			t.Fatalf("bans after ban --until:\n%s", out)
		}
		if msg := adminFails(t, base, "ban", g.UserID, "--for", "1h", "--until", until); !strings.Contains(msg, "not both") {
			t.Fatalf("--for and --until: %s", msg)
		}
		admin(t, base, "unban", g.UserID)
	})

	t.Run("disconnect", func(t *testing.T) {
		g := newGuest(t, base, 1500)
		c, err := dialErr(base, g.Token)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(websocket.StatusNormalClosure, "")
		if _, _, err := c.Read(context.Background()); err != nil { // hello
			t.Fatal(err)
		}
		if out := admin(t, base, "disconnect", g.UserID); out != "disconnect of "+g.UserID+" sent to every gateway\n" {
			t.Fatalf("disconnect printed %q", out)
		}
		if code := closeStatus(t, c); code != gateway.CloseDisconnected {
			t.Fatalf("the socket closed with %v", code)
		}
	})

	t.Run("queues", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "arena.yaml")
		if err := os.WriteFile(file, []byte("kind: room\nplayers: 3\ndeadline: 2m\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := admin(t, base, "queue", "put", "arena", file); !regexp.MustCompile(`^stored queue arena \(version \d+\)\n$`).MatchString(out) {
			t.Fatalf("queue put printed %q", out)
		}
		eventuallyOK(t, "arena in the public list", func() bool {
			q, ok := publicQueues(t, base)["arena"]
			return ok && q["kind"] == "room" && q["players"] == 3.0
		})
		out := admin(t, base, "queues")
		if !regexp.MustCompile(`(?m)^duel +in force +file *$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^arena +in force +v\d+ +\S+ +\{"deadline":"2m","kind":"room","players":3\}$`).MatchString(out) {
			t.Fatalf("queues printed:\n%s", out)
		}
		if out := admin(t, base, "queue", "retire", "arena"); !strings.HasPrefix(out, "retired queue arena (version ") {
			t.Fatalf("queue retire printed %q", out)
		}
		eventuallyOK(t, "arena gone from the public list", func() bool {
			_, ok := publicQueues(t, base)["arena"]
			return !ok
		})
		if out := admin(t, base, "queues"); !regexp.MustCompile(`(?m)^arena +retired +v\d+ `).MatchString(out) {
			t.Fatalf("queues after the retire:\n%s", out)
		}
		if msg := adminFails(t, base, "queue", "retire", "arena"); !strings.Contains(msg, "404 NOT_FOUND: no queue named arena in force") {
			t.Fatalf("retiring it again: %s", msg)
		}
		// The server's validation error comes through as it is.
		bad := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(bad, []byte(`{"kind":"room","players":3,"colour":"red"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if msg := adminFails(t, base, "queue", "put", "arena", bad); !strings.Contains(msg, "400 BAD_REQUEST") || !strings.Contains(msg, "colour") {
			t.Fatalf("an unknown field: %s", msg)
		}
		if _, ok := publicQueues(t, base)["arena"]; ok {
			t.Fatal("a refused put created the queue")
		}
	})

	t.Run("admission rate", func(t *testing.T) {
		if out := admin(t, base, "admission", "rate", "launch"); out != "launch: rate 5/s, 0 waiting, none measured yet\n" {
			t.Fatalf("admission rate printed %q", out)
		}
		// The file's queue: its other settings are not shown by the API.
		if msg := adminFails(t, base, "admission", "rate", "launch", "9"); !strings.Contains(msg, "--defaults") {
			t.Fatalf("setting a file queue's rate: %s", msg)
		}
		if out := admin(t, base, "admission", "rate", "launch", "7", "--defaults"); !regexp.MustCompile(`^queue launch: rate 5 → 7/s \(version \d+\)\n$`).MatchString(out) {
			t.Fatalf("admission rate 7 --defaults printed %q", out)
		}
		eventuallyOK(t, "rate 7 in force", func() bool {
			return publicQueues(t, base)["launch"]["rate"] == 7.0
		})
		file := filepath.Join(t.TempDir(), "launch.json")
		if err := os.WriteFile(file, []byte(`{"kind":"admission","rate":5,"tokenTTL":"1m"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		admin(t, base, "queue", "put", "launch", file)
		if out := admin(t, base, "admission", "rate", "launch", "9"); !regexp.MustCompile(`^queue launch: rate 5 → 9/s \(version \d+\)\n$`).MatchString(out) {
			t.Fatalf("admission rate 9 printed %q", out)
		}
		eventuallyOK(t, "the new rate in force", func() bool {
			return publicQueues(t, base)["launch"]["rate"] == 9.0
		})
		if out := admin(t, base, "admission", "rate", "launch"); !strings.HasPrefix(out, "launch: rate 9/s") {
			t.Fatalf("admission rate after the change: %q", out)
		}
		var v queuesView
		if err := json.Unmarshal([]byte(admin(t, base, "queues", "--json")), &v); err != nil {
			t.Fatal(err)
		}
		if cfg := compactJSON(v.latest()["launch"].Config); cfg != `{"kind":"admission","rate":9,"tokenTTL":"1m"}` {
			t.Fatalf("the stored launch: %s", cfg)
		}
		if msg := adminFails(t, base, "admission", "rate", "duel", "9"); !strings.Contains(msg, "not admission") {
			t.Fatalf("a matched queue's rate: %s", msg)
		}
		if msg := adminFails(t, base, "admission", "rate", "launch", "0"); !strings.Contains(msg, "at least 1") {
			t.Fatalf("rate 0: %s", msg)
		}
	})

	t.Run("ranking weights", func(t *testing.T) {
		out := admin(t, base, "ranking", "weights", "products", "views=1", "likes=2", "sales=4:log1p", "--by", "ops-alice")
		m := regexp.MustCompile(`^board products: weights version (\d+) by ops-alice: likes=2 sales=4:log1p views=1\n$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("ranking weights printed %q", out)
		}
		g := newGuest(t, base, 1500)
		eventuallyOK(t, "the served view under the new weights", func() bool {
			code, body := call(t, http.MethodGet, base+"/v1/rankings/products?window=day", g.Token, "")
			return code == 200 && body["weightsVersion"] == mustFloat(t, m[1])
		})
		if msg := adminFails(t, base, "ranking", "weights", "products", "views=1"); !strings.Contains(msg, "400 BAD_REQUEST") {
			t.Fatalf("weights missing metrics: %s", msg)
		}
		if msg := adminFails(t, base, "ranking", "weights", "products", "views"); !strings.Contains(msg, "METRIC=WEIGHT") {
			t.Fatalf("a malformed metric: %s", msg)
		}
	})

	t.Run("end-assignment", func(t *testing.T) {
		_, req, offer := runningSession(t, base, "pro-cli", "req-cli")
		if out := admin(t, base, "end-assignment", offer.ID); out != "assignment "+offer.ID+" (queue advice): ENDED, reason operator\n" {
			t.Fatalf("end-assignment printed %q", out)
		}
		code, body := call(t, http.MethodGet, base+"/v1/presence/providers?queue=advice", req.g.Token, "")
		if code != 200 || body["used"] != 0.0 {
			t.Fatalf("presence after the end: %d %v", code, body)
		}
		const unknown = "00000000-0000-4000-8000-000000000000"
		if msg := adminFails(t, base, "end-assignment", unknown); !strings.Contains(msg, "admin end-assignment "+unknown+": 404 NOT_FOUND: ") {
			t.Fatalf("ending an unknown assignment: %s", msg)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, _, err := runAdmin(nil, "--url", base, "bans")
		if err == nil || !strings.Contains(err.Error(), "no admin token") || !strings.Contains(err.Error(), "MATCHGATE_ADMIN_TOKEN") {
			t.Fatalf("without a token: %v", err)
		}
		out, _, err := runAdmin(nil, "--url", base, "--admin-token", "wrong-token-0123456789abcdef0123456789", "--json", "bans")
		if err == nil || !strings.Contains(err.Error(), "401 UNAUTHORIZED: missing or invalid admin token") {
			t.Fatalf("a wrong token: %v", err)
		}
		var eb struct{ Error struct{ Code string } }
		if json.Unmarshal([]byte(out), &eb) != nil || eb.Error.Code != "UNAUTHORIZED" {
			t.Fatalf("--json of a refusal printed %q", out)
		}
		if msg := adminFails(t, base, "ban"); !strings.Contains(msg, "want USER") {
			t.Fatalf("ban without a user: %s", msg)
		}
		if msg := adminFails(t, base, "frobnicate"); !strings.Contains(msg, `unknown verb "frobnicate"`) {
			t.Fatalf("an unknown verb: %s", msg)
		}
		_, stderr, err := runAdmin(nil, "ban", "--help")
		if !errors.Is(err, errHelp) || !strings.Contains(stderr, "matchgate admin ban USER") || !strings.Contains(stderr, "-reason") {
			t.Fatalf("ban --help: %v\n%s", err, stderr)
		}
		_, stderr, err = runAdmin(map[string]string{"MATCHGATE_ADMIN_TOKEN": admissionAdmin}, "--help")
		if !errors.Is(err, errHelp) || !strings.Contains(stderr, "queue put NAME FILE") || strings.Contains(stderr, admissionAdmin) {
			t.Fatalf("admin --help: %v\n%s", err, stderr)
		}
	})

	t.Run("environment", func(t *testing.T) {
		// The server's own MATCHGATE_ADMIN_TOKEN, two tokens during a rotation.
		env := map[string]string{"MATCHGATE_URL": base, "MATCHGATE_ADMIN_TOKEN": admissionAdmin + ",next-admin-token-0123456789abcdef0123"}
		if out, _, err := runAdmin(env, "bans"); err != nil || out != "no bans in force\n" {
			t.Fatalf("bans from the environment: %q %v", out, err)
		}
	})

	// Last: the node drains for good.
	t.Run("drain", func(t *testing.T) {
		if code := readyz(t, base); code != 200 {
			t.Fatalf("readyz before the drain: %d", code)
		}
		if out := admin(t, base, "drain", "cli-node"); out != "drain of node cli-node sent to every gateway\n" {
			t.Fatalf("drain printed %q", out)
		}
		eventuallyOK(t, "readyz failing", func() bool {
			return readyz(t, base) == http.StatusServiceUnavailable
		})
	})
}

// TestAdminCLIDisabled: a server without an admin token answers 404, and
// the client says why.
func TestAdminCLIDisabled(t *testing.T) {
	base := startServer(t)
	msg := adminFails(t, base, "bans")
	if !strings.Contains(msg, "404 NOT_FOUND") || !strings.Contains(msg, "needs --admin-token") {
		t.Fatalf("a server without the admin API: %s", msg)
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	var f float64
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		t.Fatal(err)
	}
	return f
}
