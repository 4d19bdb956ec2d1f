package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// A matchmaking queue behind an admission queue through the real server:
// ranked admits only the holders of a READY token of launch, over REST
// and the socket alike, and each token admits one join.

func gateServer(t *testing.T, extra ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - {name: duel, players: 2}
  - {name: ranked, players: 2, admission: launch}
  - {name: launch, kind: admission, rate: 20, tokenTTL: 1m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"--config", cfg, "--admin-token", admissionAdmin, "--guests", "true"}, extra...)...)
}

// readyToken waits for g's place in launch to be READY and returns its
// token.
func readyToken(t *testing.T, base string, g guest) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := call(t, http.MethodGet, base+"/v1/admission/launch/position", g.Token, "")
		p, _ := body["position"].(map[string]any)
		switch {
		case code != http.StatusOK:
			t.Fatalf("position: %d %v", code, body)
		case p["status"] == "READY":
			return p["token"].(string)
		case p["status"] != "WAITING":
			t.Fatalf("position: %v", p)
		case time.Now().After(deadline):
			t.Fatalf("%s not admitted within 10s: %v", g.UserID, p)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// refusal is the error of a REST answer.
func refusal(body map[string]any) (code, message, ticketID string) {
	e, _ := body["error"].(map[string]any)
	code, _ = e["code"].(string)
	message, _ = e["message"].(string)
	ticketID, _ = e["ticketId"].(string)
	return code, message, ticketID
}

// answer reads c's frames up to the one answering re, keeping the others
// for c.expect.
func answer(t *testing.T, c *client, re string) frame {
	t.Helper()
	if i := slices.IndexFunc(c.skipped, func(f frame) bool { return f.Re == re }); i >= 0 {
		f := c.skipped[i]
		c.skipped = slices.Delete(c.skipped, i, i+1)
		return f
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case f := <-c.frames:
			if f.Re == re {
				return f
			}
			c.skipped = append(c.skipped, f)
		case <-deadline:
			t.Fatalf("%s: no answer to %q within 5s", c.g.UserID, re)
		}
	}
}

func exerciseGate(t *testing.T, base string) {
	join := func(g guest, queue string) (int, map[string]any) {
		return call(t, http.MethodPost, base+"/v1/queues/"+queue+"/tickets", g.Token, `{}`)
	}

	// Without a place in launch: refused, and told where to go.
	bob := newGuest(t, base, 1500)
	code, body := join(bob, "ranked")
	if c, msg, _ := refusal(body); code != http.StatusForbidden || c != "ADMISSION_REQUIRED" || !strings.Contains(msg, "launch") {
		t.Fatalf("join without a token: %d %v", code, body)
	}
	if code, body := join(bob, "duel"); code != http.StatusAccepted {
		t.Fatalf("join of a queue behind nothing: %d %v", code, body)
	}

	// Entered and admitted, the join takes the token.
	ann := newGuest(t, base, 1500)
	if code, body := call(t, http.MethodPost, base+"/v1/admission/launch/enter", ann.Token, ""); code != http.StatusAccepted {
		t.Fatalf("enter: %d %v", code, body)
	}
	token := readyToken(t, base, ann)
	code, body = join(ann, "ranked")
	tk, _ := body["ticket"].(map[string]any)
	if code != http.StatusAccepted || tk["queue"] != "ranked" || tk["status"] != "WAITING" {
		t.Fatalf("join with a READY token: %d %v", code, body)
	}
	// The token is CONSUMED: the downstream's claim is told it was claimed
	// already, and the place is over.
	code, body = call(t, http.MethodPost, base+"/v1/admission/launch/tokens/claim", admissionAdmin, fmt.Sprintf(`{"token":%q}`, token))
	if c, _, _ := refusal(body); code != http.StatusConflict || c != "ALREADY_CLAIMED" {
		t.Fatalf("claim of the consumed token: %d %v", code, body)
	}
	if _, body := call(t, http.MethodGet, base+"/v1/admission/launch/position", ann.Token, ""); body["position"].(map[string]any)["status"] != "NOT_ENTERED" {
		t.Fatalf("position after the join: %v", body)
	}
	// A repeated join is told of the ticket, as in any queue.
	code, body = join(ann, "ranked")
	if c, _, id := refusal(body); code != http.StatusConflict || c != "ALREADY_QUEUED" || id != tk["id"] {
		t.Fatalf("repeated join: %d %v", code, body)
	}

	// Over the socket: the same refusal, then the same admission, and a
	// match with ann.
	cat := newGuest(t, base, 1500)
	ws := dial(t, base, cat)
	ws.expect("hello", 5*time.Second)
	ws.send(map[string]any{"type": "join", "id": "j1", "queue": "ranked"})
	f := answer(t, ws, "j1")
	refused := decode[struct {
		Error struct{ Code, Message string }
	}](t, f)
	if f.Type != "error" || refused.Error.Code != "ADMISSION_REQUIRED" || !strings.Contains(refused.Error.Message, "launch") {
		t.Fatalf("socket join without a token: %s", f.raw)
	}
	ws.send(map[string]any{"type": "enter", "id": "e1", "queue": "launch"})
	if f := answer(t, ws, "e1"); f.Type != "entered" {
		t.Fatalf("enter over the socket: %s", f.raw)
	}
	readyToken(t, base, cat)
	ws.send(map[string]any{"type": "join", "id": "j2", "queue": "ranked"})
	if f := answer(t, ws, "j2"); f.Type != "joined" {
		t.Fatalf("socket join with a READY token: %s", f.raw)
	}
	m := decode[struct{ Match matcher.Match }](t, ws.expect("match.found", 10*time.Second)).Match
	users := []string{m.Players[0].UserID, m.Players[1].UserID}
	slices.Sort(users)
	want := []string{ann.UserID, cat.UserID}
	slices.Sort(want)
	if m.Queue != "ranked" || !slices.Equal(users, want) {
		t.Fatalf("match %+v, want ranked with %v", m, want)
	}

	// A queue put through the admin API is checked as the file's, and
	// takes effect as one.
	code, body = call(t, http.MethodPut, base+"/v1/admin/queues/casual", admissionAdmin, `{"kind":"room","players":2,"admission":"duel"}`)
	if c, msg, _ := refusal(body); code != http.StatusBadRequest || c != "BAD_REQUEST" || !strings.Contains(msg, `admission "duel"`) {
		t.Fatalf("put a queue behind a matched one: %d %v", code, body)
	}
	if code, body := call(t, http.MethodPut, base+"/v1/admin/queues/casual", admissionAdmin, `{"kind":"room","players":2,"admission":"launch"}`); code != http.StatusOK {
		t.Fatalf("put a queue behind launch: %d %v", code, body)
	}
	eventuallyOK(t, "casual in force", func() bool {
		resp, err := http.Get(base + "/v1/queues")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var qs struct{ Queues []matcher.QueueInfo }
		return json.NewDecoder(resp.Body).Decode(&qs) == nil &&
			slices.ContainsFunc(qs.Queues, func(q matcher.QueueInfo) bool { return q.Name == "casual" })
	})
	dan := newGuest(t, base, 1500)
	code, body = join(dan, "casual")
	if c, msg, _ := refusal(body); code != http.StatusForbidden || c != "ADMISSION_REQUIRED" || !strings.Contains(msg, "launch") {
		t.Fatalf("join of casual without a token: %d %v", code, body)
	}
}

func TestAdmissionGateEmbedded(t *testing.T) {
	exerciseGate(t, gateServer(t))
}

func TestAdmissionGateRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseGate(t, gateServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}
