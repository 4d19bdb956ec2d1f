package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/protocol"
)

// A provider queue through the real server: a provider (role claim
// provider) goes online over its socket, a requester joins with
// preferences, the requester is pushed match.found naming the provider and
// the provider assignment.offered; the provider accepts (match.ready for
// the requester), ends the session (its slot takes the next requester),
// and the presence endpoint and the queue list count the providers.

const providerSecret = "provider-e2e-secret-0123456789abcdef"

func providerServer(t *testing.T, extra ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - name: advice
    kind: provider
    acceptWindow: 15s
    weights: {specialty: 2, rating: 1, load: 1, wait: 1}
    relax: [{after: 20s, drop: specialty}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"--config", cfg, "--secret", providerSecret, "--guests", "true"}, extra...)...)
}

func mint(t *testing.T, user, role string) guest {
	t.Helper()
	tok, err := gateway.SignToken([]byte(providerSecret), gateway.TokenSpec{Subject: user, Role: role, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return guest{Token: tok, UserID: user}
}

type assignmentFrame struct {
	Assignment protocol.AssignmentView `json:"assignment"`
}

type providerMatchFrame struct {
	Match protocol.ClientMatch `json:"match"`
}

func exerciseProviders(t *testing.T, base string) {
	pro := dial(t, base, mint(t, "pro-ana", "provider"))
	pro.expect("hello", 5*time.Second)
	pro.send(map[string]any{"type": "provider.online", "id": "1", "queue": "advice", "capacity": 1,
		"attributes": map[string]any{"languages": []string{"en"}, "specialties": []string{"tax"}, "sessionTypes": []string{"chat"}, "rating": 4.5}})
	pro.expect("provider", 5*time.Second)

	// A player token may not act as a provider.
	player := dial(t, base, mint(t, "not-a-provider", ""))
	player.expect("hello", 5*time.Second)
	player.send(map[string]any{"type": "provider.online", "id": "x", "queue": "advice", "capacity": 1, "attributes": map[string]any{"rating": 1}})
	if f := player.expect("error", 5*time.Second); f.Error == nil || f.Error.Code != "FORBIDDEN" {
		t.Fatalf("a player's provider.online answered %s", f.raw)
	}

	req := []*client{dial(t, base, mint(t, "req-1", "")), dial(t, base, mint(t, "req-2", ""))}
	for i, c := range req {
		c.expect("hello", 5*time.Second)
		c.send(map[string]any{"type": "join", "id": "j", "queue": "advice", "attributes": map[string]string{"language": "en", "specialty": "tax"}})
		c.expect("joined", 5*time.Second)
		if i == 0 {
			time.Sleep(50 * time.Millisecond) // req-1 waits longer
		}
	}
	found := decode[providerMatchFrame](t, req[0].expect("match.found", 5*time.Second)).Match
	if found.Provider == nil || found.Provider.UserID != "pro-ana" || found.State != "PENDING_ACCEPT" || found.Provider.Score <= 0 {
		t.Fatalf("match.found = %+v", found)
	}
	offer := decode[assignmentFrame](t, pro.expect("assignment.offered", 5*time.Second)).Assignment
	if offer.ID != found.ID || offer.Status != "OFFERED" || offer.Requester.UserID != "req-1" {
		t.Fatalf("assignment.offered = %+v", offer)
	}
	// The requester cannot accept the provider's offer.
	req[0].send(map[string]any{"type": "accept", "id": "a", "matchId": found.ID})
	if f := req[0].expect("error", 5*time.Second); f.Error == nil || f.Error.Code != "NOT_FOUND" {
		t.Fatalf("the requester's accept answered %s", f.raw)
	}
	pro.send(map[string]any{"type": "assignment.accept", "id": "2", "assignmentId": offer.ID})
	if a := decode[assignmentFrame](t, pro.expect("assignment", 5*time.Second)).Assignment; a.Status != "ACCEPTED" {
		t.Fatalf("accept answered %+v", a)
	}
	req[0].expect("match.ready", 5*time.Second)

	// ana is busy: the presence endpoint says so, the second requester waits.
	code, body := call(t, http.MethodGet, base+"/v1/presence/providers?queue=advice", req[1].g.Token, "")
	if busy, _ := body["busy"].([]any); code != 200 || len(busy) != 1 || body["used"] != 1.0 || body["capacity"] != 1.0 {
		t.Fatalf("presence: %d %v", code, body)
	}
	pro.send(map[string]any{"type": "assignment.end", "id": "3", "assignmentId": offer.ID})
	if a := decode[assignmentFrame](t, pro.expect("assignment", 5*time.Second)).Assignment; a.Status != "ENDED" {
		t.Fatalf("end answered %+v", a)
	}
	next := decode[assignmentFrame](t, pro.expect("assignment.offered", 5*time.Second)).Assignment
	if next.Requester.UserID != "req-2" {
		t.Fatalf("the freed slot went to %+v", next)
	}
	// A decline puts req-2 back in place, and never to ana again: a second
	// provider comes and is offered it.
	pro.send(map[string]any{"type": "assignment.decline", "id": "4", "assignmentId": next.ID})
	pro.expect("assignment", 5*time.Second)
	req[1].expect("match.dissolved", 5*time.Second)
	bo := dial(t, base, mint(t, "pro-bo", "provider"))
	bo.expect("hello", 5*time.Second)
	bo.send(map[string]any{"type": "provider.online", "id": "1", "queue": "advice", "capacity": 1,
		"attributes": map[string]any{"languages": []string{"en"}, "specialties": []string{"law", "tax"}, "rating": 3}})
	bo.expect("provider", 5*time.Second)
	if again := decode[assignmentFrame](t, bo.expect("assignment.offered", 5*time.Second)).Assignment; again.Requester.UserID != "req-2" {
		t.Fatalf("bo was offered %+v", again)
	}

	// Going offline withdraws the open offer: req-2 waits again.
	bo.send(map[string]any{"type": "provider.offline", "id": "5", "queue": "advice"})
	bo.expect("provider", 5*time.Second)
	req[1].expect("match.dissolved", 5*time.Second)
	code, body = call(t, http.MethodGet, base+"/v1/queues", req[1].g.Token, "")
	qs, _ := body["queues"].([]any)
	if code != 200 || len(qs) != 1 {
		t.Fatalf("queues: %d %v", code, body)
	}
	if p, _ := qs[0].(map[string]any)["providers"].(map[string]any); p["offline"] != 1.0 || p["online"] != 1.0 {
		t.Fatalf("queue's providers: %v", qs[0])
	}
}

func TestProvidersEmbedded(t *testing.T) {
	exerciseProviders(t, providerServer(t))
}

func TestProvidersRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseProviders(t, providerServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}

// runningSession has provider proUser online in advice, with capacity 1,
// and requester reqUser joined and served: the session is running.
func runningSession(t *testing.T, base, proUser, reqUser string) (pro, req *client, offer protocol.AssignmentView) {
	t.Helper()
	pro = dial(t, base, mint(t, proUser, "provider"))
	pro.expect("hello", 5*time.Second)
	pro.send(map[string]any{"type": "provider.online", "id": "1", "queue": "advice", "capacity": 1,
		"attributes": map[string]any{"languages": []string{"en"}, "specialties": []string{"tax"}, "rating": 4}})
	pro.expect("provider", 5*time.Second)
	req = dial(t, base, mint(t, reqUser, ""))
	req.expect("hello", 5*time.Second)
	req.send(map[string]any{"type": "join", "id": "j", "queue": "advice", "attributes": map[string]string{"language": "en"}})
	offer = decode[assignmentFrame](t, pro.expect("assignment.offered", 5*time.Second)).Assignment
	pro.send(map[string]any{"type": "assignment.accept", "id": "2", "assignmentId": offer.ID})
	pro.expect("assignment", 5*time.Second)
	req.expect("match.ready", 5*time.Second)
	return pro, req, offer
}

// An operator ends a running session through the admin API: the slot is
// freed and the assignment ENDED by the operator.
func TestProviderOperatorEndsASession(t *testing.T) {
	base := providerServer(t, "--admin-token", admissionAdmin)
	_, req, offer := runningSession(t, base, "pro-ana", "req-1")

	if code, _ := call(t, http.MethodPost, base+"/v1/admin/assignments/"+offer.ID+"/end", req.g.Token, ""); code != http.StatusUnauthorized {
		t.Fatalf("a player's token ended an assignment: %d", code)
	}
	code, body := call(t, http.MethodPost, base+"/v1/admin/assignments/"+offer.ID+"/end", admissionAdmin, "")
	a, _ := body["assignment"].(map[string]any)
	if code != 200 || a["status"] != "ENDED" || a["endReason"] != "operator" {
		t.Fatalf("operator end: %d %v", code, body)
	}
	code, body = call(t, http.MethodGet, base+"/v1/presence/providers?queue=advice", req.g.Token, "")
	if code != 200 || body["used"] != 0.0 {
		t.Fatalf("presence after the operator's end: %d %v", code, body)
	}
}
