package control

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// Admission queues through the admin API: created, changed (the rate) and
// retired like any queue, but a queue never changes between a matched kind
// and admission, in force or as the file defines it.
func TestAdminAdmissionQueuesAndKindChanges(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Mini(t)
	bus, _ := NewBus(BusConfig{Redis: rdb, Prefix: "t"})
	bans := NewRedisBans(rdb, "t")
	queues := &fakeQueues{}
	a, err := NewAdmin(AdminConfig{Bans: bans, Queues: queues, Base: base(t), Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, body string) error {
		_, err := a.PutQueue(ctx, name, json.RawMessage(body))
		return err
	}
	if err := put("launch", `{"kind":"admission","rate":50,"tokenTTL":"5m","abandonAfter":"60s"}`); err != nil {
		t.Fatalf("create an admission queue: %v", err)
	}
	if err := put("launch", `{"kind":"admission","rate":200}`); err != nil {
		t.Fatalf("change its rate: %v", err)
	}
	c, err := Effective(base(t), queues.list)
	if err != nil {
		t.Fatal(err)
	}
	if q, ok := findQueue(c, "launch"); !ok || q.Rate != 200 || q.Matched() {
		t.Fatalf("launch in force: %+v %v", q, ok)
	}

	for name, c := range map[string]struct{ name, body string }{
		"admission to skill":      {"launch", `{"kind":"skill","players":2}`},
		"admission to default":    {"launch", `{"players":2}`},
		"skill to admission":      {"duel", `{"kind":"admission","rate":5}`},
		"rate on a matched queue": {"duel", `{"rate":5}`},
		"rate 0":                  {"launch", `{"kind":"admission","rate":0}`},
	} {
		err := put(c.name, c.body)
		if matcher.ErrorCode(err) != matcher.CodeBadRequest {
			t.Errorf("%s: %v, want BAD_REQUEST", name, err)
		}
		if strings.HasPrefix(name, "admission to") || strings.HasPrefix(name, "skill to") {
			if err == nil || !strings.Contains(err.Error(), "cannot become") {
				t.Errorf("%s: %v, want the kind change named", name, err)
			}
		}
	}
	// skill and room are both matched: that change stands.
	if err := put("duel", `{"kind":"room","players":2}`); err != nil {
		t.Fatalf("skill to room: %v", err)
	}

	// Retired, a queue of the file keeps its kind: it comes back as one.
	if _, err := a.RetireQueue(ctx, "duel"); err != nil {
		t.Fatal(err)
	}
	if err := put("duel", `{"kind":"admission","rate":5}`); matcher.ErrorCode(err) != matcher.CodeBadRequest {
		t.Fatalf("a retired file queue back as admission: %v", err)
	}
	if err := put("duel", `{"players":2}`); err != nil {
		t.Fatalf("a retired file queue back as skill: %v", err)
	}
}
