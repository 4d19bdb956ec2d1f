package pool

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// TestWatch covers the watch set: one score per ticket, the sooner of its
// deadline and its last sign of life plus the queue's heartbeat timeout,
// written by Enqueue, Requeue and Heartbeat; members a claim leaves behind,
// which a watch scan drops, a bounded number a call; and what Watched
// returns. Against miniredis and a real Redis.
func TestWatch(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		p := New(rdb, prefix, WithClaimTTL(90*time.Second))
		if err := p.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		testWatch(t, p)
	})
}

// watchCard is the number of members of a partition's watch set.
func watchCard(tb testing.TB, p *Pool, partition string) int64 {
	tb.Helper()
	n, err := p.rdb.ZCard(context.Background(), p.Key(partition, "watch")).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func testWatch(t *testing.T, p *Pool) {
	ctx := context.Background()

	t.Run("EnqueueScore", func(t *testing.T) {
		const part = "wenq:eu"
		// Watched at: its enqueue + hbTimeout; its deadline, sooner; its
		// heartbeat (sent with the join) + hbTimeout; its deadline, sooner
		// than that; its deadline, enqueued without a timeout.
		silent := entry("silent", 1, 0, time.Hour)
		near := entry("near", 2, 0, 10*time.Second)
		beat := entry("beat", 3, 0, time.Hour)
		beat.Heartbeat = t0.Add(20 * time.Second)
		beatNear := entry("beatnear", 4, 0, 40*time.Second)
		beatNear.Heartbeat = t0.Add(20 * time.Second)
		untimed := entry("untimed", 5, 0, 50*time.Minute)
		untimed.Heartbeat = t0.Add(20 * time.Second)
		mustEnqueue(t, p, part, silent, near, beat, beatNear)
		mustEnqueueWith(t, p, part, 0, untimed)

		want := []struct {
			e  matcher.Entry
			at time.Duration
		}{
			{near, 10 * time.Second},
			{silent, 30 * time.Second},
			{beatNear, 40 * time.Second},
			{beat, 50 * time.Second},
			{untimed, 50 * time.Minute},
		}
		for _, w := range want {
			if got := watchOf(t, p, part, w.e); !got.Equal(t0.Add(w.at)) {
				t.Errorf("%s watched at t0+%v, want t0+%v", w.e.TicketID, got.Sub(t0), w.at)
			}
			only(t, p, part, w.e.TicketID, member(w.e))
		}
		if h := hash(t, p, part, "silent"); h["hb"] != "" {
			t.Errorf("silent's hash has a heartbeat: %v", h)
		}
		if h := hash(t, p, part, "beat"); h["hb"] != msTime(beat.Heartbeat) {
			t.Errorf("beat's hash %v, want hb %s", h, msTime(beat.Heartbeat))
		}
		// Watched up to each score, inclusive, soonest first.
		for i, w := range want {
			got, err := p.Watched(ctx, part, t0.Add(w.at), 10)
			if err != nil {
				t.Fatal(err)
			}
			var wantIDs []string
			for _, x := range want[:i+1] {
				wantIDs = append(wantIDs, x.e.TicketID)
			}
			if !reflect.DeepEqual(ids(got), wantIDs) {
				t.Errorf("watched at t0+%v = %v, want %v", w.at, ids(got), wantIDs)
			}
			if got, err := p.Watched(ctx, part, t0.Add(w.at-time.Millisecond), 10); err != nil || len(got) != i {
				t.Errorf("watched a millisecond before t0+%v = %v, %v; want the %d before", w.at, ids(got), err, i)
			}
		}
	})

	t.Run("ClaimLeavesMemberScanDrops", func(t *testing.T) {
		const part = "wclaim:eu"
		gone := entry("gone", 1, 0, time.Hour)           // watched at t0+30s
		live := entry("live", 2, time.Second, time.Hour) // at t0+31s
		mustEnqueue(t, p, part, gone, live)
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{gone}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		// The claim leaves the member in watch, at its score.
		claimedOnly(t, p, part, "gone", member(gone))
		if w := watchOf(t, p, part, gone); !w.Equal(t0.Add(hbTimeout)) {
			t.Fatalf("claimed member watched at %v, want %v", w, t0.Add(hbTimeout))
		}
		// Before its score, a scan neither reads nor drops it.
		if got, err := p.Watched(ctx, part, t0.Add(hbTimeout-time.Millisecond), 10); err != nil || len(got) != 0 {
			t.Fatalf("watched before anything is due = %+v, %v", got, err)
		}
		claimedOnly(t, p, part, "gone", member(gone))
		// Past it, with room for one: the claimed member is not returned,
		// nor does it take the live one's place; it is dropped.
		got, err := p.Watched(ctx, part, t0.Add(time.Minute), 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := []matcher.Entry{seenAt(live, live.Enqueue)}; !reflect.DeepEqual(got, want) {
			t.Fatalf("watched = %+v, want %+v", got, want)
		}
		if s := inSets(t, p, part, "gone"); s != [3]bool{} {
			t.Fatalf("claimed ticket left in sets %v after the watch scan", s)
		}
		only(t, p, part, "live", member(live))
		// The drop leaves the claimed hash alone: a cancel still learns
		// who won.
		if h := hash(t, p, part, "gone"); h["state"] != "claimed" || h["match"] != "m1" {
			t.Fatalf("hash of the dropped member %v", h)
		}
		if rr, err := p.Remove(ctx, part, "gone"); err != nil || rr != (RemoveResult{ClaimedBy: "m1"}) {
			t.Fatalf("remove after the drop = %+v, %v", rr, err)
		}
	})

	// pile enqueues garbage tickets (watched at t0+30s+i ms) and a live
	// one behind them all (at t0+40s), and claims the garbage ones,
	// fence 0, four a match.
	pile := func(t *testing.T, part string, garbage int) (claimed []matcher.Entry, live matcher.Entry) {
		t.Helper()
		var calls []enqueueCall
		for i := range garbage {
			e := entry(fmt.Sprintf("g%04d", i), float64(i%50), time.Duration(i)*time.Millisecond, time.Hour)
			claimed = append(claimed, e)
			calls = append(calls, enqueueCall{partition: part, key: p.ticketKey(part, e.TicketID), args: p.enqueueArgs(e, hashTTL, hbTimeout)})
		}
		live = entry("live", 7, 10*time.Second, time.Hour)
		calls = append(calls, enqueueCall{partition: part, key: p.ticketKey(part, live.TicketID), args: p.enqueueArgs(live, hashTTL, hbTimeout)})
		for i, r := range p.enqueueBatch(ctx, calls) {
			if r.err != nil || !r.added {
				t.Fatalf("enqueue %d = %+v", i, r)
			}
		}
		var reqs []ClaimRequest
		for i := 0; i < garbage; i += 4 {
			reqs = append(reqs, ClaimRequest{MatchID: fmt.Sprint("m", i), Entries: claimed[i:min(i+4, garbage)]})
		}
		res, _, err := p.ClaimMany(ctx, part, 0, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil || !r.OK {
				t.Fatalf("claim %d = %+v", i, r)
			}
		}
		if size, _ := p.Size(ctx, part); size != 1 {
			t.Fatalf("pool of %d after the claims, want the live one", size)
		}
		if c := watchCard(t, p, part); c != int64(garbage)+1 {
			t.Fatalf("watch holds %d, want %d (the claims leave their members)", c, garbage+1)
		}
		return claimed, live
	}

	t.Run("ManyClaimedAhead", func(t *testing.T) {
		const part = "wmany:eu"
		const garbage = 1500 // more than watchDrops (scan.lua) + n
		const n = 10
		const watchDrops = 1000
		claimed, live := pile(t, part, garbage)

		now := t0.Add(time.Minute)
		// The first scan drops a bounded number from the head and does
		// not reach the live one.
		got, err := p.Watched(ctx, part, now, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("first watch scan read %v, want nothing (the live one is behind %d claimed)", ids(got), garbage)
		}
		dropped := garbage + 1 - int(watchCard(t, p, part))
		if dropped < watchDrops || dropped > watchDrops+n {
			t.Fatalf("first watch scan dropped %d, want %d..%d", dropped, watchDrops, watchDrops+n)
		}
		// From the head: what is left is the rest, in order.
		head, err := p.rdb.ZRange(ctx, p.Key(part, "watch"), 0, 0).Result()
		if err != nil || len(head) != 1 || head[0] != member(claimed[dropped]) {
			t.Fatalf("head of watch after the first scan %q, %v; want %s", head, err, claimed[dropped].TicketID)
		}
		only(t, p, part, "live", member(live))
		// The second drops the rest and returns the live one.
		got, err = p.Watched(ctx, part, now, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := []matcher.Entry{seenAt(live, live.Enqueue)}; !reflect.DeepEqual(got, want) {
			t.Fatalf("second watch scan = %+v, want %+v", got, want)
		}
		if c := watchCard(t, p, part); c != 1 {
			t.Fatalf("watch holds %d after the second scan, want the live one", c)
		}
	})

	t.Run("ManyClaimedAheadOneCall", func(t *testing.T) {
		// With room for n = 1000 one call examines up to 2000 members:
		// it drops all 1500 ahead of the live one (more than the script
		// removes in one ZREM, a chunk of 1000) and returns it.
		const part = "wmany1:eu"
		_, live := pile(t, part, 1500)
		got, err := p.Watched(ctx, part, t0.Add(time.Minute), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if want := []matcher.Entry{seenAt(live, live.Enqueue)}; !reflect.DeepEqual(got, want) {
			t.Fatalf("watch scan = %+v, want %+v", got, want)
		}
		if c := watchCard(t, p, part); c != 1 {
			t.Fatalf("watch holds %d after the scan, want the live one", c)
		}
	})

	t.Run("RequeueRevives", func(t *testing.T) {
		const part = "wrq:eu"
		a := entry("a", 1, 0, time.Hour)
		b := entry("b", 2, time.Second, time.Hour)
		c := entry("c", 3, 2*time.Second, 5*time.Minute)
		mustEnqueue(t, p, part, a, b, c)
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(10*time.Second), hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat = %v, %v", ok, err)
		}
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{a, b, c}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		for _, e := range []matcher.Entry{a, b, c} {
			claimedOnly(t, p, part, e.TicketID, member(e))
		}
		// a, its claimed member still in watch (at t0+40s), requeued as
		// read (without its heartbeat) with a longer timeout: the score is
		// recomputed from the heartbeat its hash kept.
		if n, err := p.Requeue(ctx, part, []matcher.Entry{a}, hashTTL, time.Time{}, 2*hbTimeout); err != nil || n != 1 {
			t.Fatalf("requeue of a = %d, %v", n, err)
		}
		only(t, p, part, "a", member(a))
		if w := watchOf(t, p, part, a); !w.Equal(t0.Add(10*time.Second + 2*hbTimeout)) {
			t.Fatalf("a watched at %v, want %v", w, t0.Add(10*time.Second+2*hbTimeout))
		}
		// b's and c's claimed members are dropped by a scan; a is live
		// again and not due yet.
		if got, err := p.Watched(ctx, part, t0.Add(time.Minute), 10); err != nil || len(got) != 0 {
			t.Fatalf("watched = %+v, %v; want nothing", got, err)
		}
		for _, id := range []string{"b", "c"} {
			if s := inSets(t, p, part, id); s != [3]bool{} {
				t.Fatalf("%s in sets %v after the scan, want none", id, s)
			}
		}
		// Requeued, they are watched again: b a timeout after its enqueue
		// (it never sent a heartbeat), c at its deadline (no timeout).
		if n, err := p.Requeue(ctx, part, []matcher.Entry{b}, hashTTL, time.Time{}, hbTimeout); err != nil || n != 1 {
			t.Fatalf("requeue of b = %d, %v", n, err)
		}
		if n, err := p.Requeue(ctx, part, []matcher.Entry{c}, hashTTL, time.Time{}, 0); err != nil || n != 1 {
			t.Fatalf("requeue of c = %d, %v", n, err)
		}
		for _, x := range []struct {
			e  matcher.Entry
			at time.Time
		}{{b, b.Enqueue.Add(hbTimeout)}, {c, c.Deadline}} {
			only(t, p, part, x.e.TicketID, member(x.e))
			if w := watchOf(t, p, part, x.e); !w.Equal(x.at) {
				t.Fatalf("%s watched at %v, want %v", x.e.TicketID, w, x.at)
			}
		}
		want := []matcher.Entry{seenAt(b, b.Enqueue), seenAt(a, t0.Add(10*time.Second)), seenAt(c, c.Enqueue)}
		for i, at := range []time.Time{t0.Add(time.Minute), t0.Add(10*time.Second + 2*hbTimeout), c.Deadline} {
			if got, err := p.Watched(ctx, part, at, 10); err != nil || !reflect.DeepEqual(got, want[:i+1]) {
				t.Fatalf("watched at %v = %+v, %v; want %+v", at, got, err, want[:i+1])
			}
		}
	})

	t.Run("HeartbeatScore", func(t *testing.T) {
		const part = "whb:eu"
		a := entry("a", 1, 0, 2*time.Minute)
		b := entry("b", 2, 0, time.Hour)
		mustEnqueue(t, p, part, a, b)
		bWatch := watchOf(t, p, part, b)
		steps := []struct {
			at      time.Duration
			timeout time.Duration
			watch   time.Duration // a's watch score after it
			hb      time.Duration // a's hash heartbeat after it
		}{
			{20 * time.Second, hbTimeout, 50 * time.Second, 20 * time.Second},
			// The deadline comes first.
			{100 * time.Second, hbTimeout, 2 * time.Minute, 100 * time.Second},
			// Not later than the last, with another timeout: the score is
			// rewritten from the last heartbeat, which stays.
			{50 * time.Second, 10 * time.Second, 110 * time.Second, 100 * time.Second},
			{50 * time.Second, 0, 2 * time.Minute, 100 * time.Second},
			{100 * time.Second, 5 * time.Second, 105 * time.Second, 100 * time.Second},
		}
		for _, s := range steps {
			if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(s.at), s.timeout); err != nil || !ok {
				t.Fatalf("heartbeat at t0+%v timeout %v = %v, %v", s.at, s.timeout, ok, err)
			}
			if w := watchOf(t, p, part, a); !w.Equal(t0.Add(s.watch)) {
				t.Fatalf("after a heartbeat at t0+%v timeout %v: watched at t0+%v, want t0+%v", s.at, s.timeout, w.Sub(t0), s.watch)
			}
			if h := hash(t, p, part, "a"); h["hb"] != msTime(t0.Add(s.hb)) {
				t.Fatalf("after a heartbeat at t0+%v timeout %v: hash %v, want hb t0+%v", s.at, s.timeout, h, s.hb)
			}
			only(t, p, part, "a", member(a))
		}
		if w := watchOf(t, p, part, b); !w.Equal(bWatch) {
			t.Fatalf("a's heartbeats moved b to %v", w)
		}

		// Claimed: refused, and the member the claim left in watch keeps
		// its score.
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{a}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(110*time.Second), hbTimeout); err != nil || ok {
			t.Fatalf("heartbeat of a claimed ticket = %v, %v; want false", ok, err)
		}
		claimedOnly(t, p, part, "a", member(a))
		if w := watchOf(t, p, part, a); !w.Equal(t0.Add(105 * time.Second)) {
			t.Fatalf("a refused heartbeat moved the claimed member to %v", w)
		}
		if h := hash(t, p, part, "a"); h["hb"] != msTime(t0.Add(100*time.Second)) || h["state"] != "claimed" {
			t.Fatalf("hash after a refused heartbeat %v", h)
		}

		// A waiting ticket missing from watch (see Rewatch) is put back
		// by its next heartbeat.
		if err := p.rdb.ZRem(ctx, p.Key(part, "watch"), member(b)).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := p.Heartbeat(ctx, part, "b", t0.Add(110*time.Second), hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat of b = %v, %v", ok, err)
		}
		if w := watchOf(t, p, part, b); !w.Equal(t0.Add(140 * time.Second)) {
			t.Fatalf("b watched at t0+%v after its heartbeat, want t0+140s", w.Sub(t0))
		}
	})

	t.Run("Rewatch", func(t *testing.T) {
		const part = "wre:eu"
		lost := entry("lost", 1, 0, time.Hour)
		taken := entry("taken", 2, 0, time.Hour)
		kept := entry("kept", 3, 0, time.Hour)
		mustEnqueue(t, p, part, lost, taken, kept)
		if ok, err := p.Heartbeat(ctx, part, "kept", t0.Add(20*time.Second), hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat = %v, %v", ok, err)
		}
		// lost and taken are missing from watch, as a layout before it
		// left every ticket; taken is claimed after the pool was read.
		if err := p.rdb.ZRem(ctx, p.Key(part, "watch"), member(lost), member(taken)).Err(); err != nil {
			t.Fatal(err)
		}
		read := []matcher.Entry{lost, taken, kept, {TicketID: "bare"}}
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{taken}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		n, err := p.Rewatch(ctx, part, read, hbTimeout)
		if err != nil || n != 1 {
			t.Fatalf("rewatch = %d, %v; want 1 put back", n, err)
		}
		if w := watchOf(t, p, part, lost); !w.Equal(watchAt(lost, hbTimeout)) {
			t.Fatalf("lost watched at t0+%v, want t0+%v", w.Sub(t0), watchAt(lost, hbTimeout).Sub(t0))
		}
		if s := inSets(t, p, part, "taken"); s != [3]bool{} {
			t.Fatalf("the claimed ticket is in pool, enq, watch: %v; want none", s)
		}
		// kept keeps the place its heartbeat gave it.
		if w := watchOf(t, p, part, kept); !w.Equal(t0.Add(50 * time.Second)) {
			t.Fatalf("kept watched at t0+%v, want t0+50s", w.Sub(t0))
		}
		if n, err := p.Rewatch(ctx, part, read, hbTimeout); err != nil || n != 0 {
			t.Fatalf("second rewatch = %d, %v; want none", n, err)
		}
	})

	t.Run("WatchedHeartbeats", func(t *testing.T) {
		const part = "wread:eu"
		// Watched at t0+30s, 32s, 33s, 34s and 35s.
		quiet := entry("quiet", 1, 0, time.Hour)
		sent := entry("sent", 2, time.Second, time.Hour)
		sent.Heartbeat = t0.Add(2 * time.Second)
		lost := entry("lost", 3, 3*time.Second, time.Hour)
		other := entry("other", 4, 4*time.Second, time.Hour)
		beat := entry("beat", 5, 2*time.Second, time.Hour)
		mustEnqueue(t, p, part, quiet, sent, lost, other, beat)
		if ok, err := p.Heartbeat(ctx, part, "beat", t0.Add(5*time.Second), hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat = %v, %v", ok, err)
		}
		// lost's hash is gone; other's names another member (its fields
		// read elsewhere).
		if err := p.rdb.Del(ctx, p.ticketKey(part, "lost")).Err(); err != nil {
			t.Fatal(err)
		}
		moved := other
		moved.Skill = 40
		if err := p.rdb.HSet(ctx, p.ticketKey(part, "other"), "m", member(moved)).Err(); err != nil {
			t.Fatal(err)
		}
		want := []matcher.Entry{
			seenAt(quiet, quiet.Enqueue), // none sent: its enqueue
			sent,                         // the one it joined with
			{TicketID: "lost"},           // bare, for the caller to restore
			{TicketID: "other"},
			seenAt(beat, t0.Add(5*time.Second)), // the hash's
		}
		for range 2 {
			got, err := p.Watched(ctx, part, t0.Add(time.Hour), 10)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("watched\n got  %+v\n want %+v", got, want)
			}
			// The bare ones are still in the pool: the scan keeps them.
			only(t, p, part, "lost", member(lost))
			only(t, p, part, "other", member(other))
		}
		// In a batch too.
		got, err := p.ScanMany(ctx, part, []Scan{OldestScan(1), WatchScan(t0.Add(33*time.Second), 10)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[1], want[:3]) {
			t.Fatalf("watch scan in a batch\n got  %+v\n want %+v", got[1], want[:3])
		}
	})

	t.Run("PromoteAndCancel", func(t *testing.T) {
		s0, ov := "wpromo:eu/s0", "wpromo:eu/ov"
		both := []string{s0, ov}
		old := entry("old", 1, 0, time.Hour) // watched at t0+35s
		old.Heartbeat = t0.Add(5 * time.Second)
		young := entry("young", 2, time.Minute, time.Hour) // t0+90s
		stray := entry("stray", 3, time.Second, time.Hour) // t0+31s
		mustEnqueue(t, p, s0, old, young, stray)
		moved, err := p.Promote(ctx, s0, ov, t0.Add(time.Second), 10)
		if err != nil || !reflect.DeepEqual(moved, []string{"old", "stray"}) {
			t.Fatalf("promote = %v, %v; want old, stray", moved, err)
		}
		// The watch member moves with its score.
		only(t, p, ov, "old", member(old))
		only(t, p, s0, "old", "")
		if w := watchOf(t, p, ov, old); !w.Equal(t0.Add(5*time.Second + hbTimeout)) {
			t.Fatalf("old watched in the overflow pool at %v, want %v", w, t0.Add(5*time.Second+hbTimeout))
		}
		only(t, p, s0, "young", member(young))
		if got, err := p.Watched(ctx, s0, t0.Add(time.Hour), 10); err != nil || !reflect.DeepEqual(got, []matcher.Entry{seenAt(young, young.Enqueue)}) {
			t.Fatalf("watched in the sub-pool = %+v, %v; want young", got, err)
		}
		if got, err := p.Watched(ctx, ov, t0.Add(time.Hour), 10); err != nil || !reflect.DeepEqual(got, []matcher.Entry{seenAt(stray, stray.Enqueue), old}) {
			t.Fatalf("watched in the overflow pool = %+v, %v; want stray, old", got, err)
		}

		// A cancel removes the member from watch in whichever pool holds it.
		for _, c := range []struct {
			id   string
			pool string
		}{{"old", ov}, {"young", s0}} {
			if rr, err := p.RemoveAny(ctx, both, c.id); err != nil || rr != (RemoveResult{Removed: true}) {
				t.Fatalf("remove %s = %+v, %v", c.id, rr, err)
			}
			for _, part := range both {
				if s := inSets(t, p, part, c.id); s != [3]bool{} {
					t.Fatalf("%s left in the sets of %s: %v", c.id, part, s)
				}
			}
		}
		// A stray (out of pool, its hash waiting) is not removed, but its
		// members in enq and watch are, with its hash.
		if err := p.rdb.ZRem(ctx, p.Key(ov, "pool"), member(stray)).Err(); err != nil {
			t.Fatal(err)
		}
		if s := inSets(t, p, ov, "stray"); s != [3]bool{false, true, true} {
			t.Fatalf("stray in %v", s)
		}
		if rr, err := p.RemoveAny(ctx, both, "stray"); err != nil || rr != (RemoveResult{}) {
			t.Fatalf("remove of a stray = %+v, %v", rr, err)
		}
		if s := inSets(t, p, ov, "stray"); s != [3]bool{} {
			t.Fatalf("stray left in %v", s)
		}
		if h := hash(t, p, ov, "stray"); len(h) != 0 {
			t.Fatalf("stray's hash left: %v", h)
		}
		for _, part := range both {
			if c := watchCard(t, p, part); c != 0 {
				t.Fatalf("watch of %s holds %d", part, c)
			}
		}
	})

	t.Run("HeartbeatSkipsWhatAClaimLeft", func(t *testing.T) {
		// Claimed in the sub-pool, then put back in the overflow pool: the
		// member the claim left in the sub-pool's watch keeps its score, so
		// that it reaches the head and is dropped however long the player
		// heartbeats.
		s0, ov := "wleft:eu/s0", "wleft:eu/ov"
		a := entry("a", 1, 0, time.Hour) // watched at t0+30s
		mustEnqueue(t, p, s0, a)
		if r, err := p.Claim(ctx, s0, 0, "m1", []matcher.Entry{a}); err != nil || !r.OK {
			t.Fatalf("claim = %+v, %v", r, err)
		}
		if _, err := p.Requeue(ctx, ov, []matcher.Entry{a}, hashTTL, time.Time{}, hbTimeout); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(10 * time.Minute)
		if ok, err := p.HeartbeatAny(ctx, []string{s0, ov}, "a", at, hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat = %v, %v", ok, err)
		}
		if w := watchOf(t, p, ov, a); !w.Equal(at.Add(hbTimeout)) {
			t.Fatalf("watched in the overflow pool at %v, want %v", w, at.Add(hbTimeout))
		}
		if w := watchOf(t, p, s0, a); !w.Equal(t0.Add(hbTimeout)) {
			t.Fatalf("left behind in the sub-pool at %v, want %v", w, t0.Add(hbTimeout))
		}
		if got, err := p.Watched(ctx, s0, t0.Add(time.Minute), 10); err != nil || len(got) != 0 || watchCard(t, p, s0) != 0 {
			t.Fatalf("sub-pool watched %+v, %v, holds %d; want it dropped", got, err, watchCard(t, p, s0))
		}
	})
}
