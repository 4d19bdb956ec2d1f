package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// A master of the cluster killed mid-run: its replica takes over, and
// every player who joined before, during or after the outage ends in a
// match with a partner who ends in the same one. Players whose sockets were
// open throughout, their channels spread over every master, join after
// the failover and are each pushed match.found: the sharded subscriptions
// of the killed master moved to the new one by themselves.
func TestEndToEndClusterMasterKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a Redis node")
	}
	rdb := redistest.FailoverCluster(t)
	prefix := redistest.Prefix(t)
	url := redistest.FailoverClusterURL()
	base := startServer(t, "--redis-url", url, "--postgres-url", pgURL(t), "--redis-prefix", prefix)

	type joined struct {
		g      guest
		ticket string
	}
	var all []joined
	join := func(n int) {
		for range n {
			g := retry(t, "guest", func() (guest, bool) { return tryGuest(base) })
			id := retry(t, "join", func() (string, bool) { return tryJoin(base, g) })
			all = append(all, joined{g, id})
		}
	}
	// Sockets held open across the failover, then joined: their channels
	// are on every master, the killed one's too.
	var waiting []*client
	for range 12 {
		c := dial(t, base, newGuest(t, base, 1500))
		c.expect("hello", 5*time.Second)
		waiting = append(waiting, c)
	}
	join(6) // before
	// The duel queue's partition lives in the slot of its hash tag.
	killed, promoted := redistest.KillMaster(t, rdb, prefix+":{duel:global}:x")
	t.Logf("killed %s; %s took over", killed, promoted)
	join(6) // while the cluster settles
	time.Sleep(500 * time.Millisecond)
	join(6) // after

	matchOf := map[string]string{} // user → match
	playersOf := map[string][]string{}
	for _, j := range all {
		v := retry(t, "a match for "+j.g.UserID, func() (matcher.TicketView, bool) {
			v, ok := tryTicket(base, j.g, j.ticket)
			return v, ok && v.Ticket.Status == matcher.StatusMatched && v.Match != nil
		})
		matchOf[j.g.UserID] = v.Match.ID
		playersOf[v.Match.ID] = v.Match.UserIDs()
	}
	for u, m := range matchOf {
		ps := playersOf[m]
		if len(ps) != 2 || ps[0] == ps[1] {
			t.Fatalf("match %s of %s has players %v", m, u, ps)
		}
		for _, p := range ps {
			if matchOf[p] != m {
				t.Fatalf("%s is in %s, its partner %s in %s", u, m, p, matchOf[p])
			}
		}
	}

	for i, c := range waiting {
		c.send(map[string]any{"type": "join", "id": fmt.Sprint("w", i), "queue": "duel"})
		c.expect("joined", 10*time.Second)
	}
	for _, c := range waiting {
		m := c.expectMatch(15 * time.Second)
		if !slices.Contains(m.UserIDs(), c.g.UserID) || len(m.Players) != 2 {
			t.Fatalf("match for %s after the failover: %v", c.g.UserID, m.UserIDs())
		}
	}
}

// retry calls try every 100 ms until it reports done, for at most 60 s: the
// time a failover may take, with a margin.
func retry[T any](t *testing.T, what string, try func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, ok := try()
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 60s (last: %+v)", what, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tryGuest(base string) (guest, bool) {
	var g guest
	resp, err := http.Post(base+"/v1/auth/guest", "application/json", strings.NewReader(`{"skill": 1500}`))
	if err != nil {
		return g, false
	}
	defer resp.Body.Close()
	return g, resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&g) == nil
}

// tryJoin joins the duel queue over REST; a 5xx (Redis between masters)
// is worth another try, anything else is not.
func tryJoin(base string, g guest) (string, bool) {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/queues/duel/tickets", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		if resp.StatusCode < 500 {
			panic(fmt.Sprintf("join: %d %s", resp.StatusCode, body))
		}
		return "", false
	}
	var v struct{ Ticket matcher.Ticket }
	if err := json.Unmarshal(body, &v); err != nil {
		return "", false
	}
	return v.Ticket.ID, true
}

func tryTicket(base string, g guest, id string) (matcher.TicketView, bool) {
	var v matcher.TicketView
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/tickets/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	return v, resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&v) == nil
}

// Three gateways, three matchers and two relays, each a process, on the
// Redis Cluster and one PostgreSQL: the partitions spread over the
// matchers by their leases, players on any gateway are matched with players
// on any other, and when a gateway is killed its players reconnect to
// another and find their tickets there.
func TestEndToEndManyNodesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs eight processes")
	}
	redistest.Cluster(t)
	prefix := redistest.Prefix(t)
	db := pgURL(t)
	bin := buildBinary(t)
	common := []string{"--redis-url", redistest.ClusterURL(),
		"--postgres-url", db, "--redis-prefix", prefix, "--lease-ttl", "2s", "--log-level", "debug"}
	var matchers []*node
	for i := range 3 {
		matchers = append(matchers, spawnNode(t, bin, fmt.Sprint("matcher", i), false, append([]string{"--roles", "matcher"}, common...)...))
	}
	for i := range 2 {
		spawnNode(t, bin, fmt.Sprint("relay", i), false, append([]string{"--roles", "relay"}, common...)...)
	}
	var gateways []*node
	var bases []string
	for i := range 3 {
		g := spawnNode(t, bin, fmt.Sprint("gateway", i), true, append([]string{"--roles", "gateway"}, common...)...)
		gateways, bases = append(gateways, g), append(bases, g.base)
	}
	// The built-in queues have six partitions: each matcher ends up with
	// its share (two), none with all.
	retry(t, "the partitions spread over the matchers", func() ([]int, bool) {
		held := make([]int, len(matchers))
		ok := true
		for i, m := range matchers {
			held[i] = strings.Count(m.logs.String(), `msg="partition acquired"`) - strings.Count(m.logs.String(), `msg="partition released"`) -
				strings.Count(m.logs.String(), `msg="partition lost"`)
			ok = ok && held[i] >= 1 && held[i] <= 3
		}
		return held, ok
	})
	exercise(t, bases, 24)

	// A player waiting on gateway0, which dies; back on gateway1 it finds
	// its ticket and is matched with a player of gateway2.
	a := newGuest(t, bases[0], 1500)
	ca := dial(t, bases[0], a)
	ca.expect("hello", 5*time.Second)
	ca.send(map[string]any{"type": "join", "id": "a", "queue": "duel"})
	ticket := decode[struct{ Ticket matcher.Ticket }](t, ca.expect("joined", 5*time.Second)).Ticket
	gateways[0].kill(t)
	<-ca.closed
	back := dial(t, bases[1], a)
	if h := decode[helloFrame](t, back.expect("hello", 5*time.Second)); len(h.Tickets) != 1 || h.Tickets[0].ID != ticket.ID {
		t.Fatalf("hello on gateway1 after gateway0 died: %s", back.lastRaw(h))
	}
	b := newGuest(t, bases[2], 1500)
	cb := dial(t, bases[2], b)
	cb.expect("hello", 5*time.Second)
	cb.send(map[string]any{"type": "join", "id": "b", "queue": "duel"})
	cb.expect("joined", 5*time.Second)
	ma, mb := back.expectMatch(15*time.Second), cb.expectMatch(15*time.Second)
	if ma.ID != mb.ID || !slices.Contains(ma.TicketIDs(), ticket.ID) {
		t.Fatalf("after the gateway died: a got %s, b got %s", ma.ID, mb.ID)
	}
}
