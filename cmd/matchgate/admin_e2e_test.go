package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/matchgate/matchgate/gateway"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// TestAdminAcrossNodes: two servers share Redis and PostgreSQL; admin
// requests made on one act on the other's sockets, and a queue created
// through the admin API is in force for a process started afterwards.
func TestAdminAcrossNodes(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	db := pgURL(t)
	common := []string{"--redis-url", redistest.URL(), "--postgres-url", db, "--redis-prefix", prefix, "--admin-token", hostileAdminToken}
	a, _ := startHostileServer(t, append(common, "--node", "node-a")...)
	b, logsB := startHostileServer(t, append(common, "--node", "node-b")...)
	ha := &hostile{t: t, base: a, accepted: map[string]int{}, attacker: map[string]bool{}, from: map[string]string{}}
	hb := &hostile{t: t, base: b, accepted: map[string]int{}, attacker: map[string]bool{}, from: map[string]string{}}

	// A ban made on node A closes the user's socket on node B with 4403,
	// and node B refuses the user from then on.
	mallory := hb.guestFrom("", false)
	onB := hb.dialFrom(mallory, "")
	onB.expect("hello", 5*time.Second)
	if st, _, body := ha.do("PUT", "/v1/admin/bans/"+mallory.UserID, hostileAdminToken, "", `{"reason":"test","duration":"1h"}`); st != 200 {
		t.Fatalf("ban on A: %d %s", st, body)
	}
	if code := hb.closeCode(onB); code != gateway.CloseBanned {
		t.Fatalf("banned socket on B closed with %v", code)
	}
	if _, err := hb.tryDialFrom(mallory.Token, "", nil); err == nil || !strings.Contains(err.Error(), "status 403") {
		t.Fatalf("banned reconnect to B: %v", err)
	}
	if st, _, body := hb.do("POST", "/v1/queues/duel/tickets", mallory.Token, "", `{}`); st != 403 {
		t.Fatalf("banned join on B: %d %s", st, body)
	}
	if st, _, _ := hb.do("DELETE", "/v1/admin/bans/"+mallory.UserID, hostileAdminToken, "", ""); st != 204 {
		t.Fatalf("unban on B: %d", st)
	}
	eventuallyOK(t, "unbanned on A", func() bool {
		st, _, _ := ha.do("POST", "/v1/queues/duel/tickets", mallory.Token, "", `{}`)
		return st == 202
	})

	// Disconnect from B reaches A.
	alice := ha.guestFrom("", false)
	onA := ha.dialFrom(alice, "")
	onA.expect("hello", 5*time.Second)
	if st, _, _ := hb.do("POST", "/v1/admin/users/"+alice.UserID+"/disconnect", hostileAdminToken, "", ""); st != 202 {
		t.Fatalf("disconnect: %d", st)
	}
	if code := ha.closeCode(onA); code != gateway.CloseDisconnected {
		t.Fatalf("disconnected socket closed with %v", code)
	}

	// A queue created on A: both processes hear of it at once; a process
	// started afterwards has it in force.
	if st, _, body := ha.do("PUT", "/v1/admin/queues/arena", hostileAdminToken, "", `{"kind":"room","players":3}`); st != 200 {
		t.Fatalf("put queue: %d %s", st, body)
	}
	eventuallyOK(t, "B told of the change", func() bool {
		return strings.Contains(logsB.String(), "queue configuration changed")
	})
	// ... and B puts it in force without a restart: three players joining
	// it there are matched into a room.
	eventuallyOK(t, "B applied the change", func() bool {
		return strings.Contains(logsB.String(), "queue configuration applied")
	})
	var room []*client
	for i := range 3 {
		g := hb.guestFrom("", false)
		c := hb.dialFrom(g, "")
		c.expect("hello", 5*time.Second)
		c.send(map[string]any{"type": "join", "id": fmt.Sprint("arena", i), "queue": "arena"})
		c.expect("joined", 5*time.Second)
		room = append(room, c)
	}
	for _, c := range room {
		if m := decode[struct{ Match matcher.Match }](t, c.expect("match.found", 10*time.Second)).Match; m.Queue != "arena" || len(m.Players) != 3 {
			t.Fatalf("arena match: %+v", m)
		}
	}
	c, _ := startHostileServer(t, append(common, "--node", "node-c", "--roles", "gateway,matcher")...)
	hc := &hostile{t: t, base: c, accepted: map[string]int{}, attacker: map[string]bool{}, from: map[string]string{}}
	_, _, body := hc.do("GET", "/v1/queues", "", "", "")
	var qs struct{ Queues []matcher.QueueInfo }
	if err := json.Unmarshal(body, &qs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range qs.Queues {
		found = found || (q.Name == "arena" && q.Kind == "room" && q.Players == 3)
	}
	if !found {
		t.Fatalf("node C's queues: %s", body)
	}

	// Drain node B by name, through node A.
	bob := hb.guestFrom("", false)
	onB2 := hb.dialFrom(bob, "")
	onB2.expect("hello", 5*time.Second)
	if st, _, _ := ha.do("POST", "/v1/admin/nodes/node-b/drain", hostileAdminToken, "", ""); st != 202 {
		t.Fatalf("drain: %d", st)
	}
	if code := hb.closeCode(onB2); code != websocket.StatusGoingAway {
		t.Fatalf("drained socket closed with %v", code)
	}
	if st, _, _ := hb.do("GET", "/readyz", "", "", ""); st != 503 {
		t.Fatalf("B's readyz after the drain: %d", st)
	}
	if st, _, _ := ha.do("GET", "/readyz", "", "", ""); st != 200 {
		t.Fatalf("A's readyz: %d", st)
	}
}

func eventuallyOK(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
