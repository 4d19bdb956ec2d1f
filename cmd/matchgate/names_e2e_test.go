package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// namedGuest signs in a guest who typed name.
func namedGuest(t *testing.T, base, name string) (guest, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "skill": 1500})
	resp, err := http.Post(base+"/v1/auth/guest", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var g struct {
		guest
		Name string `json:"name"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &g) != nil {
		t.Fatalf("guest %q: %d %s", name, resp.StatusCode, b)
	}
	return g.guest, g.Name
}

// nameOf is the name the match shows for userID's seat.
func nameOf(t *testing.T, m matcher.Match, userID string) string {
	t.Helper()
	for _, p := range m.Players {
		if p.UserID == userID {
			return p.Name
		}
	}
	t.Fatalf("match %s does not seat %s: %+v", m.ID, userID, m.Players)
	return ""
}

// exerciseNames has two guests who typed names (one of them hostile) join
// the duel queue: each is pushed the match with the other's name, GET
// shows it, and so does the hello after a reconnect.
func exerciseNames(t *testing.T, base string) {
	a, aName := namedGuest(t, base, "\u202eAda\u200d  ✨\n")
	b, bName := namedGuest(t, base, "Bob Builder")
	if aName != "Ada ✨" || bName != "Bob Builder" {
		t.Fatalf("names %q and %q, want the cleaned ones", aName, bName)
	}
	want := map[string]string{a.UserID: aName, b.UserID: bName}
	other := map[string]string{a.UserID: b.UserID, b.UserID: a.UserID}
	clients := []*client{dial(t, base, a), dial(t, base, b)}
	ticketOf := map[string]string{}
	for i, c := range clients {
		c.expect("hello", 5*time.Second)
		c.send(map[string]any{"type": "join", "id": fmt.Sprint("j", i), "queue": "duel"})
		tk := decode[struct{ Ticket matcher.Ticket }](t, c.expect("joined", 5*time.Second)).Ticket
		if tk.Name != want[c.g.UserID] {
			t.Fatalf("joined ticket of %s named %q, want %q", c.g.UserID, tk.Name, want[c.g.UserID])
		}
		ticketOf[c.g.UserID] = tk.ID
	}
	var matchID string
	for _, c := range clients {
		me, them := c.g.UserID, other[c.g.UserID]
		m := decode[struct{ Match matcher.Match }](t, c.expect("match.found", 10*time.Second)).Match
		if got := nameOf(t, m, them); got != want[them] {
			t.Fatalf("match.found for %s shows %s as %q, want %q", me, them, got, want[them])
		}
		matchID = m.ID
		v := getTicket(t, base, c.g, ticketOf[me])
		if v.Ticket.Name != want[me] || v.Match == nil || nameOf(t, *v.Match, them) != want[them] || nameOf(t, *v.Match, me) != want[me] {
			t.Fatalf("GET ticket of %s: %+v", me, v)
		}
	}
	// The name is in the wire as "name", and omitted for nobody here.
	clients[0].conn.Close(websocket.StatusNormalClosure, "bye")
	<-clients[0].closed
	back := dial(t, base, a)
	f := back.expect("hello", 5*time.Second)
	h := decode[helloFrame](t, f)
	if len(h.Matches) != 1 || h.Matches[0].ID != matchID || nameOf(t, h.Matches[0], b.UserID) != bName ||
		len(h.Tickets) != 1 || h.Tickets[0].Name != aName {
		t.Fatalf("hello after reconnect: %s", f.raw)
	}
	if !strings.Contains(string(f.raw), `"name":"Bob Builder"`) {
		t.Fatalf("hello lacks the wire field name: %s", f.raw)
	}
}

func TestNamesEmbedded(t *testing.T) {
	exerciseNames(t, startServer(t))
}

func TestNamesRedisPostgres(t *testing.T) {
	redistest.Real(t) // skips (or fails in CI) when Redis is absent
	prefix := redistest.Prefix(t)
	exerciseNames(t, startServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}
