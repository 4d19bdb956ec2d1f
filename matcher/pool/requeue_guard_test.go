package pool

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// A guarded requeue into a sub-pool leaves a ticket waiting in a sibling
// pool, or claimed from one, where it is; it puts back one claimed from the
// sub-pool itself and one whose hash is gone. The claim names the pool it
// was made from, and the requeue forgets it.
func TestRequeueGuarded(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		p := New(rdb, prefix)
		ctx := context.Background()
		s1, s2, ov := "g:eu/s1", "g:eu/s2", "g:eu/ov"
		promoted := entry("promoted", 10, 0, 5*time.Minute)
		claimedOv := entry("claimed-ov", 20, time.Second, 5*time.Minute)
		claimedHere := entry("claimed-here", 30, 2*time.Second, 5*time.Minute)
		gone := entry("gone", 40, 3*time.Second, 5*time.Minute)
		mustEnqueue(t, p, ov, promoted, claimedOv)
		mustEnqueue(t, p, s1, claimedHere)
		if res, err := p.Claim(ctx, ov, 0, "m-ov", []matcher.Entry{claimedOv}); err != nil || !res.OK {
			t.Fatalf("claim from ov = %+v, %v", res, err)
		}
		if res, err := p.Claim(ctx, s1, 0, "m-s1", []matcher.Entry{claimedHere}); err != nil || !res.OK {
			t.Fatalf("claim from s1 = %+v, %v", res, err)
		}
		if h := hash(t, p, s1, claimedHere.TicketID); h["from"] != p.Key(s1, "pool") || h["match"] != "m-s1" {
			t.Fatalf("claimed hash %v does not name the pool it was claimed from", h)
		}
		// The guard's pools: this one (ignored) and every sibling.
		all := []string{s1, s2, ov}
		n, err := p.RequeueGuarded(ctx, s1, all, []matcher.Entry{promoted, claimedOv, claimedHere, gone}, hashTTL, t0, hbTimeout)
		if err != nil || n != 2 {
			t.Fatalf("guarded requeue = %d, %v; want claimed-here and gone put back", n, err)
		}
		for _, c := range []struct {
			e        matcher.Entry
			s1, ov   [3]bool
			state    string
			fromPool string
		}{
			{promoted, [3]bool{}, [3]bool{true, true, true}, "waiting", ""},
			{claimedOv, [3]bool{}, claimedSets, "claimed", p.Key(ov, "pool")},
			{claimedHere, [3]bool{true, true, true}, [3]bool{}, "waiting", ""},
			{gone, [3]bool{true, true, true}, [3]bool{}, "waiting", ""},
		} {
			id := c.e.TicketID
			if got := inSets(t, p, s1, id); got != c.s1 {
				t.Errorf("%s in s1's sets %v, want %v", id, got, c.s1)
			}
			if got := inSets(t, p, ov, id); got != c.ov {
				t.Errorf("%s in ov's sets %v, want %v", id, got, c.ov)
			}
			if h := hash(t, p, s1, id); h["state"] != c.state || h["from"] != c.fromPool {
				t.Errorf("%s hash %v, want state %s from %q", id, h, c.state, c.fromPool)
			}
		}
		if h := hash(t, p, s1, claimedHere.TicketID); h["match"] != "" {
			t.Errorf("requeued hash %v still names its match", h)
		}
		// Unguarded, the requeue puts back whatever it is given (the
		// dissolve of a match does, into the player's own sub-pool).
		if n, err := p.Requeue(ctx, s1, []matcher.Entry{claimedOv}, hashTTL, time.Time{}, hbTimeout); err != nil || n != 1 {
			t.Fatalf("requeue = %d, %v", n, err)
		}
		if err := func() error {
			_, err := p.RequeueGuarded(ctx, s1, []string{"g:na/ov"}, []matcher.Entry{gone}, hashTTL, t0, hbTimeout)
			return err
		}(); err == nil {
			t.Fatal("a guard of another region's pool was accepted")
		}
	})
}

// The reconciler's requeue puts back a ticket claimed from the pool only
// when the claim is dead: made under an older fence token than the pool's
// (or unfenced, once the pool is leased). A live owner's claim, a claim
// from a sibling and a ticket waiting in a sibling are left alone.
func TestRequeueMissing(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		p := New(rdb, prefix)
		ctx := context.Background()
		s1, ov := "m:eu/s1", "m:eu/ov"
		dead := entry("dead", 10, 0, 5*time.Minute)
		live := entry("live", 20, time.Second, 5*time.Minute)
		unfenced := entry("unfenced", 30, 2*time.Second, 5*time.Minute)
		fromOv := entry("from-ov", 40, 3*time.Second, 5*time.Minute)
		inOv := entry("in-ov", 50, 4*time.Second, 5*time.Minute)
		mustEnqueue(t, p, s1, dead, live, unfenced)
		mustEnqueue(t, p, ov, fromOv, inOv)
		claim := func(part string, fence int64, e matcher.Entry) {
			t.Helper()
			if res, err := p.Claim(ctx, part, fence, "m-"+e.TicketID, []matcher.Entry{e}); err != nil || !res.OK {
				t.Fatalf("claim %s = %+v, %v", e.TicketID, res, err)
			}
		}
		// Before any lease, an unfenced claim is no older than the pool's
		// (absent) token: left alone.
		claim(s1, 0, unfenced)
		if n, err := p.RequeueMissing(ctx, s1, []string{ov}, []matcher.Entry{unfenced}, hashTTL, t0, hbTimeout); err != nil || n != 0 {
			t.Fatalf("requeue of an unfenced claim of an unleased pool = %d, %v", n, err)
		}
		tok1, err := p.AcquireLease(ctx, s1, "a", t0, time.Minute, 0)
		if err != nil || tok1 == 0 {
			t.Fatal(tok1, err)
		}
		claim(s1, tok1, dead)
		if _, err := p.ReleaseLease(ctx, s1, "a", tok1); err != nil {
			t.Fatal(err)
		}
		tok2, err := p.AcquireLease(ctx, s1, "b", t0, time.Minute, tok1)
		if err != nil || tok2 <= tok1 {
			t.Fatal(tok2, err)
		}
		claim(s1, tok2, live)
		claim(ov, 0, fromOv)
		h := hash(t, p, s1, live.TicketID)
		if h["fence"] != fmt.Sprint(tok2) {
			t.Fatalf("claimed hash %v does not name its fence token %d", h, tok2)
		}
		n, err := p.RequeueMissing(ctx, s1, []string{ov}, []matcher.Entry{dead, live, unfenced, fromOv, inOv}, hashTTL, t0, hbTimeout)
		if err != nil || n != 2 {
			t.Fatalf("requeue = %d, %v; want dead and unfenced back", n, err)
		}
		for id, want := range map[string]bool{"dead": true, "unfenced": true, "live": false, "from-ov": false, "in-ov": false} {
			if got := inSets(t, p, s1, id)[0]; got != want {
				t.Errorf("%s in s1: %v, want %v", id, got, want)
			}
		}
		if got := inSets(t, p, ov, "in-ov"); got != [3]bool{true, true, true} {
			t.Errorf("in-ov left its pool: %v", got)
		}
		for id, state := range map[string]string{"dead": "waiting", "live": "claimed", "from-ov": "claimed"} {
			if h := hash(t, p, s1, id); h["state"] != state {
				t.Errorf("%s hash %v, want %s", id, h, state)
			}
		}
		if h := hash(t, p, s1, "dead"); h["fence"] != "" || h["from"] != "" || h["match"] != "" {
			t.Errorf("requeued hash %v keeps its claim's fields", h)
		}
	})
}
