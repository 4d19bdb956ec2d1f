package pool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// TestSubPools covers the sub-pool layout, the promotion script, the
// multi-pool cancel and heartbeat, offers, the pending index, the recent
// outcomes and the per-user keys, against miniredis and a real Redis.
func TestSubPools(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		p := New(rdb, prefix)
		if err := p.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		testSubPools(t, p)
	})
}

func testSubPools(t *testing.T, p *Pool) {
	ctx := context.Background()

	t.Run("KeyLayout", func(t *testing.T) {
		if got, want := p.Key("ranked:eu/s2", "pool"), p.prefix+":{ranked:eu}:s2:pool"; got != want {
			t.Fatalf("Key = %q, want %q", got, want)
		}
		if got, want := p.ticketKey("ranked:eu/ov", "x"), p.prefix+":{ranked:eu}:t:x"; got != want {
			t.Fatalf("ticketKey = %q, want %q (shared by the region's pools)", got, want)
		}
		for _, bad := range []string{"", "q:r/", "q:r/a/b", "{q}:r/s1", "/s1"} {
			if err := checkPartition(bad); err == nil {
				t.Errorf("partition %q accepted", bad)
			}
		}
		if err := checkSiblings([]string{"q:eu/s0", "q:na/ov"}); err == nil {
			t.Error("pools of two regions accepted as siblings")
		}
	})

	t.Run("PromoteKeepsScores", func(t *testing.T) {
		s0, ov := "promo:eu/s0", "promo:eu/ov"
		old := entry("old", 10, 0, 5*time.Minute)
		old.Heartbeat = t0.Add(time.Second)
		mid := entry("mid", 20, time.Second, 5*time.Minute+time.Second)
		young := entry("young", 30, 9*time.Second, 5*time.Minute+9*time.Second)
		mustEnqueue(t, p, s0, old, mid, young)
		before := contents(t, p, s0, "old", "mid")

		moved, err := p.Promote(ctx, s0, ov, t0.Add(time.Second), 10)
		if err != nil || !slices.Equal(moved, []string{"old", "mid"}) {
			t.Fatalf("promote = %v, %v; want old and mid", moved, err)
		}
		after := contents(t, p, ov, "old", "mid")
		for _, set := range []string{"pool", "enq", "watch"} {
			b := before[set].([]redis.Z)
			var want []redis.Z
			for _, z := range b {
				if memberID(z.Member.(string)) != "young" {
					want = append(want, z)
				}
			}
			if !reflect.DeepEqual(after[set], want) {
				t.Fatalf("%s of the overflow pool = %v, want the original scores %v", set, after[set], want)
			}
		}
		if !reflect.DeepEqual(after["t:old"], before["t:old"]) {
			t.Fatalf("hash changed: %v → %v", before["t:old"], after["t:old"])
		}
		if in := inSets(t, p, s0, "old"); in != [3]bool{} {
			t.Fatalf("old still in the sub-pool: %v", in)
		}
		if n, _ := p.Size(ctx, s0); n != 1 {
			t.Fatalf("sub-pool holds %d, want 1", n)
		}
		// A retried enqueue into the sub-pool does not duplicate it.
		if added, err := p.Enqueue(ctx, s0, old, hashTTL, hbTimeout); err != nil || added {
			t.Fatalf("re-enqueue of a promoted ticket = %v, %v", added, err)
		}
		// Scans of the overflow pool read the shared hashes.
		es, err := p.Oldest(ctx, ov, 10)
		if err != nil || !reflect.DeepEqual(es, scanned(old, mid)) {
			t.Fatalf("oldest of overflow = %+v, %v", es, err)
		}
		if w := watchOf(t, p, ov, old); !w.Equal(old.Heartbeat.Add(hbTimeout)) {
			t.Fatalf("watched in overflow at %v, want its heartbeat plus the timeout %v", w, old.Heartbeat.Add(hbTimeout))
		}
		// (Both watched at t0+31s: in member order.)
		if es, err := p.Watched(ctx, ov, t0.Add(time.Hour), 10); err != nil || len(es) != 2 || !reflect.DeepEqual(byID(es...), byID(old, seenAt(mid, mid.Enqueue))) {
			t.Fatalf("watched of overflow = %+v, %v", es, err)
		}
		// Heartbeat and cancel find it wherever it is.
		both := []string{s0, ov}
		if ok, err := p.HeartbeatAny(ctx, both, "old", t0.Add(time.Minute), hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat = %v, %v", ok, err)
		}
		if sc, ok := zscore(t, p, ov, "watch", member(old)); !ok || sc != float64(t0.Add(time.Minute+hbTimeout).UnixMilli()) {
			t.Fatalf("watch in overflow = %v (%v)", sc, ok)
		}
		if w := membersOf(t, p, s0, "watch", "old"); len(w) != 0 {
			t.Fatalf("heartbeat added the ticket to the sub-pool's watch: %q", w)
		}
		part, e, found, err := p.Locate(ctx, both, "old")
		if err != nil || !found || part != ov || e.Skill != 10 || !e.Enqueue.Equal(old.Enqueue) {
			t.Fatalf("locate = %s %+v %v %v", part, e, found, err)
		}
		if res, err := p.RemoveAny(ctx, both, "old"); err != nil || !res.Removed {
			t.Fatalf("remove = %+v, %v", res, err)
		}
		if in, in0 := inSets(t, p, ov, "old"), inSets(t, p, s0, "old"); in != [3]bool{} || in0 != [3]bool{} {
			t.Fatalf("removed ticket left in the overflow pool's sets %v, the sub-pool's %v", in, in0)
		}
		if _, _, found, _ := p.Locate(ctx, both, "old"); found {
			t.Fatal("removed ticket still located")
		}
		if n, _ := p.Size(ctx, ov); n != 1 {
			t.Fatalf("overflow holds %d, want 1 (mid)", n)
		}
		if _, err := p.Promote(ctx, s0, "other:eu/ov", t0, 1); err == nil {
			t.Fatal("promotion across hash tags accepted")
		}
	})

	t.Run("PromoteUnderConcurrentClaims", func(t *testing.T) {
		// Claims in the sub-pool and in the overflow pool race promotions:
		// every ticket ends claimed exactly once or still in exactly one
		// pool; nobody is in two pools or in none. A claimed ticket's
		// member is left in the watch set of the pool that claimed it,
		// and in no other set.
		s0, ov := "race:eu/s0", "race:eu/ov"
		const n = 300
		es := make([]matcher.Entry, n)
		for i := range n {
			es[i] = entry(fmt.Sprint("r", i), float64(i), time.Duration(i)*time.Millisecond, time.Hour)
			mustEnqueue(t, p, s0, es[i])
		}
		var (
			mu      sync.Mutex
			claimed = map[string]int{}
			wg      sync.WaitGroup
		)
		claimer := func(part string, seed uint64) {
			rng := rand.New(rand.NewPCG(seed, 1))
			for range 200 {
				ea, eb := es[rng.IntN(n)], es[rng.IntN(n)]
				a, b := ea.TicketID, eb.TicketID
				if a == b {
					continue
				}
				res, err := p.Claim(ctx, part, 0, fmt.Sprint("m-", seed, a, b), []matcher.Entry{ea, eb})
				if err != nil {
					t.Error(err)
					return
				}
				if res.OK {
					mu.Lock()
					claimed[a]++
					claimed[b]++
					mu.Unlock()
				}
			}
		}
		wg.Go(func() { claimer(s0, 1) })
		wg.Go(func() { claimer(ov, 2) })
		wg.Go(func() {
			for i := range 60 {
				if _, err := p.Promote(ctx, s0, ov, t0.Add(time.Duration(i*5)*time.Millisecond), 7); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Wait()
		for i := range n {
			id := fmt.Sprint("r", i)
			inS0, inOv := inSets(t, p, s0, id), inSets(t, p, ov, id)
			places, left := claimed[id], 0
			for _, in := range []struct {
				name string
				sets [3]bool
			}{{"sub-pool", inS0}, {"overflow pool", inOv}} {
				switch in.sets {
				case [3]bool{}:
				case [3]bool{true, true, true}:
					places++
				case claimedSets:
					left++
				default:
					t.Fatalf("%s half in the %s: %v", id, in.name, in.sets)
				}
			}
			if places != 1 {
				t.Fatalf("%s: claimed %d times, in sub-pool %v, in overflow %v", id, claimed[id], inS0, inOv)
			}
			if left != claimed[id] {
				t.Fatalf("%s: claimed %d times, left in watch by a claim %d times (sub-pool %v, overflow %v)", id, claimed[id], left, inS0, inOv)
			}
		}
	})

	t.Run("Offers", func(t *testing.T) {
		home, to := "off:eu", "off:na"
		a, b := entry("oa", 10, 0, time.Hour), entry("ob", 20, time.Second, time.Hour)
		a.Activity = 0.25
		mustEnqueue(t, p, home, a, b)
		if n, err := p.Offer(ctx, to, home, []matcher.Entry{a, b}, t0, t0.Add(2*time.Second)); err != nil || n != 2 {
			t.Fatalf("offer = %d, %v", n, err)
		}
		got, err := p.Offers(ctx, to, t0.Add(time.Second), 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("offers = %+v, %v", got, err)
		}
		want := a
		want.Home = home
		if got[0].TicketID == "ob" {
			got[0], got[1] = got[1], got[0]
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("offer read back %+v, want %+v", got[0], want)
		}
		// The neighbour's own pool is untouched; home still holds them.
		if n, _ := p.Size(ctx, to); n != 0 {
			t.Fatalf("neighbour pool holds %d", n)
		}
		if n, _ := p.Size(ctx, home); n != 2 {
			t.Fatalf("home pool holds %d", n)
		}
		// Expired offers are not read, and the next offer purges them.
		if got, _ := p.Offers(ctx, to, t0.Add(3*time.Second), 10); len(got) != 0 {
			t.Fatalf("expired offers read: %+v", got)
		}
		if _, err := p.Offer(ctx, to, home, []matcher.Entry{a}, t0.Add(3*time.Second), t0.Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if n, _ := p.rdb.ZCard(ctx, p.Key(to, "offers")).Result(); n != 1 {
			t.Fatalf("offers set holds %d after a purge, want 1", n)
		}
		if err := p.WithdrawOffers(ctx, to, "oa"); err != nil {
			t.Fatal(err)
		}
		if got, _ := p.Offers(ctx, to, t0.Add(3*time.Second), 10); len(got) != 0 {
			t.Fatalf("withdrawn offer read: %+v", got)
		}
		if _, err := p.Offer(ctx, to, home, []matcher.Entry{a}, t0, t0); err == nil {
			t.Fatal("an offer expiring at once accepted")
		}
	})

	t.Run("Pending", func(t *testing.T) {
		part := "pend:eu/s1" // any pool of the region names its index
		// One alone, two in one call.
		if err := p.AddPending(ctx, part, Pending{MatchID: "m1", AcceptBy: t0}); err != nil {
			t.Fatal(err)
		}
		if err := p.AddPending(ctx, part, Pending{MatchID: "m2", AcceptBy: t0.Add(time.Second)},
			Pending{MatchID: "m3", AcceptBy: t0.Add(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if err := p.AddPending(ctx, part); err != nil {
			t.Fatalf("an empty batch: %v", err)
		}
		due, err := p.PendingDue(ctx, "pend:eu", t0.Add(time.Second), 10)
		if err != nil || !slices.Equal(due, []string{"m1", "m2"}) {
			t.Fatalf("due = %v, %v", due, err)
		}
		if err := p.RemovePending(ctx, "pend:eu/ov", "m1"); err != nil {
			t.Fatal(err)
		}
		all, _ := p.PendingDue(ctx, "pend:eu", t0, 0)
		if !slices.Equal(all, []string{"m2", "m3"}) {
			t.Fatalf("all = %v", all)
		}
	})

	t.Run("AllocationFailure", func(t *testing.T) {
		if failing, _ := p.AllocationFailing(ctx, "alloc:eu", t0); failing {
			t.Fatal("failing before any failure")
		}
		if err := p.MarkAllocationFailure(ctx, "alloc:eu", t0, time.Minute); err != nil {
			t.Fatal(err)
		}
		if failing, err := p.AllocationFailing(ctx, "alloc:eu", t0.Add(59*time.Second)); !failing || err != nil {
			t.Fatalf("failing = %v, %v", failing, err)
		}
		// The caller's clock decides, not the key's expiry.
		if failing, err := p.AllocationFailing(ctx, "alloc:eu", t0.Add(time.Minute)); failing || err != nil {
			t.Fatalf("failing a minute on = %v, %v", failing, err)
		}
	})

	t.Run("Stats", func(t *testing.T) {
		part := "stats:eu/s0"
		at := t0.Add(time.Minute)
		if err := p.RecordOutcomes(ctx, part, []time.Time{at}, []Outcome{{At: at, Wait: 1500 * time.Millisecond, Kind: OutcomeMatched}, {At: at, Wait: time.Second, Kind: OutcomeTimeout}}); err != nil {
			t.Fatal(err)
		}
		if err := p.RecordOutcomes(ctx, "stats:eu", nil, []Outcome{{At: at, Wait: time.Minute, Kind: OutcomeExpired}}); err != nil {
			t.Fatal(err)
		}
		outs, matches, err := p.Stats(ctx, "stats:eu/ov")
		if err != nil || len(outs) != 3 || len(matches) != 1 || !matches[0].Equal(time.UnixMilli(at.UnixMilli())) {
			t.Fatalf("stats = %+v %v %v", outs, matches, err)
		}
		if outs[0].Kind != OutcomeExpired || outs[0].Wait != time.Minute || outs[2].Wait != 1500*time.Millisecond {
			t.Fatalf("outcomes newest first = %+v", outs)
		}
		var many []Outcome
		for range StatsCap + 5 {
			many = append(many, Outcome{At: at, Wait: time.Second, Kind: OutcomeMatched})
		}
		_ = p.RecordOutcomes(ctx, part, nil, many)
		if outs, _, _ := p.Stats(ctx, part); len(outs) != StatsCap {
			t.Fatalf("kept %d outcomes, want the cap %d", len(outs), StatsCap)
		}
	})

	t.Run("CooldownAndLastSkill", func(t *testing.T) {
		if d, err := p.Cooldown(ctx, "ranked", "zed", t0); err != nil || d != 0 {
			t.Fatalf("cooldown before = %v, %v", d, err)
		}
		if err := p.SetCooldown(ctx, "ranked", "zed", t0, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if d, err := p.Cooldown(ctx, "ranked", "zed", t0.Add(10*time.Second)); err != nil || d != 20*time.Second {
			t.Fatalf("cooldown = %v, %v", d, err)
		}
		if d, err := p.Cooldown(ctx, "ranked", "zed", t0.Add(30*time.Second)); err != nil || d != 0 {
			t.Fatalf("cooldown at its end = %v, %v", d, err)
		}
		if d, _ := p.Cooldown(ctx, "casual", "zed", t0); d != 0 {
			t.Fatalf("cooldown leaks to another queue: %v", d)
		}
		if _, ok, err := p.LastSkill(ctx, "zed"); ok || err != nil {
			t.Fatalf("last skill before = %v, %v", ok, err)
		}
		if err := p.RememberSkill(ctx, "zed", 1234.5); err != nil {
			t.Fatal(err)
		}
		if s, ok, err := p.LastSkill(ctx, "zed"); !ok || err != nil || s != 1234.5 {
			t.Fatalf("last skill = %v, %v, %v", s, ok, err)
		}
	})
}
