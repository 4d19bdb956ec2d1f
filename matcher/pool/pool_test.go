package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

var t0 = time.UnixMilli(1_700_000_000_000)

const hashTTL = 10 * time.Minute

// atT0 is a pool clock standing still at t0, for tests that compare what
// Redis holds (the ends the hashes store) across calls.
func atT0() time.Time { return t0 }

// hbTimeout is the queue heartbeat timeout the tests pass to Enqueue,
// Requeue and Heartbeat, unless a test is about another one: a ticket's
// watch score is the sooner of its deadline and its last sign of life plus
// it.
const hbTimeout = 30 * time.Second

// entry builds a waiting ticket whose enqueue time and deadline are offsets
// from t0.
func entry(id string, skill float64, enq, dl time.Duration) matcher.Entry {
	return matcher.Entry{
		TicketID: id,
		UserID:   "u-" + id,
		Skill:    skill,
		Activity: 0.5,
		Enqueue:  t0.Add(enq),
		Deadline: t0.Add(dl),
	}
}

// mustEnqueue enqueues es with the heartbeat timeout hbTimeout.
func mustEnqueue(tb testing.TB, p *Pool, partition string, es ...matcher.Entry) {
	tb.Helper()
	mustEnqueueWith(tb, p, partition, hbTimeout, es...)
}

// mustEnqueueWith enqueues es with the heartbeat timeout given (0: watched
// at their deadlines alone).
func mustEnqueueWith(tb testing.TB, p *Pool, partition string, timeout time.Duration, es ...matcher.Entry) {
	tb.Helper()
	for _, e := range es {
		added, err := p.Enqueue(context.Background(), partition, e, hashTTL, timeout)
		if err != nil {
			tb.Fatalf("enqueue %s: %v", e.TicketID, err)
		}
		if !added {
			tb.Fatalf("enqueue %s: not added", e.TicketID)
		}
	}
}

func ids(es []matcher.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.TicketID
	}
	return out
}

// contents is everything Redis holds for some tickets of a partition, to
// compare before and after an operation that must not change anything.
func contents(tb testing.TB, p *Pool, partition string, ticketIDs ...string) map[string]any {
	tb.Helper()
	ctx := context.Background()
	out := map[string]any{}
	for _, s := range []string{"pool", "enq", "watch"} {
		zs, err := p.rdb.ZRangeWithScores(ctx, p.Key(partition, s), 0, -1).Result()
		if err != nil {
			tb.Fatal(err)
		}
		out[s] = zs
	}
	for _, id := range ticketIDs {
		h, err := p.rdb.HGetAll(ctx, p.ticketKey(partition, id)).Result()
		if err != nil {
			tb.Fatal(err)
		}
		out["t:"+id] = h
	}
	return out
}

func hash(tb testing.TB, p *Pool, partition, id string) map[string]string {
	tb.Helper()
	h, err := p.rdb.HGetAll(context.Background(), p.ticketKey(partition, id)).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// inSets tells whether the pool, enq and watch sets of a partition hold a
// member naming the ticket id (its fields whatever they are). A waiting
// ticket is in all three; a claimed one is left in watch alone, until a
// watch scan drops it.
func inSets(tb testing.TB, p *Pool, partition, id string) [3]bool {
	tb.Helper()
	var out [3]bool
	for i, s := range []string{"pool", "enq", "watch"} {
		out[i] = len(membersOf(tb, p, partition, s, id)) > 0
	}
	return out
}

// claimedSets is inSets of a ticket a claim took: out of pool and enq, its
// member left in watch.
var claimedSets = [3]bool{false, false, true}

// membersOf is every member of one set of a partition that names the ticket
// id: one at most, while the pool is sound. Every set names a ticket by its
// member.
func membersOf(tb testing.TB, p *Pool, partition, set, id string) []string {
	tb.Helper()
	all, err := p.rdb.ZRange(context.Background(), p.Key(partition, set), 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, m := range all {
		if memberID(m) == id {
			out = append(out, m)
		}
	}
	return out
}

// zscore is the score of member m in one set of a partition; ok is false
// when m is not there.
func zscore(tb testing.TB, p *Pool, partition, set, m string) (sc float64, ok bool) {
	tb.Helper()
	sc, err := p.rdb.ZScore(context.Background(), p.Key(partition, set), m).Result()
	switch {
	case err == nil:
		return sc, true
	case errors.Is(err, redis.Nil):
		return 0, false
	default:
		tb.Fatal(err)
		return 0, false
	}
}

// watchOf is the watch score of e's member: when a pass is to look at it.
func watchOf(tb testing.TB, p *Pool, partition string, e matcher.Entry) time.Time {
	tb.Helper()
	sc, ok := zscore(tb, p, partition, "watch", member(e))
	if !ok {
		tb.Fatalf("%s: member %q not in watch", e.TicketID, member(e))
	}
	return time.UnixMilli(int64(sc))
}

// seenAt is e with its last sign of life at: the entry whose watchAt is
// the watch score a heartbeat at at gives it.
func seenAt(e matcher.Entry, at time.Time) matcher.Entry {
	e.Heartbeat = at
	return e
}

// scanned is e as a scan other than "watch" reads it: every field but the
// heartbeat, which is in the hash and not part of the member.
func scanned(es ...matcher.Entry) []matcher.Entry {
	out := make([]matcher.Entry, len(es))
	for i, e := range es {
		e.Heartbeat = time.Time{}
		out[i] = e
	}
	return out
}

// byID indexes entries by ticket id.
func byID(es ...matcher.Entry) map[string]matcher.Entry {
	m := make(map[string]matcher.Entry, len(es))
	for _, e := range es {
		m[e.TicketID] = e
	}
	return m
}

// pick is the entries of ticketIDs, in order; an id m does not hold is an
// entry by that id that was never enqueued.
func pick(m map[string]matcher.Entry, ticketIDs ...string) []matcher.Entry {
	out := make([]matcher.Entry, len(ticketIDs))
	for i, id := range ticketIDs {
		e, ok := m[id]
		if !ok {
			e = entry(id, 0, 0, time.Hour)
		}
		out[i] = e
	}
	return out
}

// TestPool is the pool's contract, run against miniredis and a real Redis.
func TestPool(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		p := New(rdb, prefix, WithClaimTTL(90*time.Second), WithClock(atT0))
		if err := p.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		testPool(t, p)
	})
}

func testPool(t *testing.T, p *Pool) {
	ctx := context.Background()

	t.Run("EnqueueIdempotent", func(t *testing.T) {
		const part = "enq:eu"
		first := entry("a", 1500, 0, 5*time.Minute)
		first.Estimated = true
		first.Heartbeat = t0.Add(time.Second)
		mustEnqueue(t, p, part, first)

		retry := entry("a", 1900, time.Minute, 9*time.Minute)
		retry.UserID = "someone-else"
		// Another heartbeat timeout too: the first write's watch score stays.
		added, err := p.Enqueue(ctx, part, retry, hashTTL, 2*hbTimeout)
		if err != nil || added {
			t.Fatalf("second enqueue: added=%v err=%v, want false nil", added, err)
		}
		got, err := p.Oldest(ctx, part, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := scanned(first); !reflect.DeepEqual(got, want) {
			t.Fatalf("after retry got %+v, want %+v", got, want)
		}
		// The heartbeat is the hash's, read by a watch scan.
		if got, err := p.Watched(ctx, part, t0.Add(time.Hour), 10); err != nil || !reflect.DeepEqual(got, []matcher.Entry{first}) {
			t.Fatalf("watched after retry got %+v, %v; want %+v", got, err, first)
		}
		if h := hash(t, p, part, "a"); h["state"] != "waiting" || h["m"] != member(first) || h["hb"] != msTime(first.Heartbeat) {
			t.Fatalf("hash %v", h)
		}
		for _, set := range []string{"pool", "enq", "watch"} {
			if ms := membersOf(t, p, part, set, "a"); !reflect.DeepEqual(ms, []string{member(first)}) {
				t.Fatalf("%s holds %q for a, want only the first member", set, ms)
			}
		}
		// Its first heartbeat plus the first timeout, before the deadline.
		if at, want := watchOf(t, p, part, first), t0.Add(time.Second+hbTimeout); !at.Equal(want) {
			t.Fatalf("watch score after retry %v, want the first write's %v", at, want)
		}
	})

	t.Run("ClaimAllOrNothing", func(t *testing.T) {
		const part = "aon:eu"
		es := byID(entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))
		mustEnqueue(t, p, part, pick(es, "a", "b")...)
		before := contents(t, p, part, "a", "b", "ghost")
		res, err := p.Claim(ctx, part, 0, "m1", pick(es, "a", "ghost", "b"))
		if err != nil {
			t.Fatal(err)
		}
		if res.OK || !reflect.DeepEqual(res.Missing, []string{"ghost"}) {
			t.Fatalf("claim = %+v, want missing [ghost]", res)
		}
		if after := contents(t, p, part, "a", "b", "ghost"); !reflect.DeepEqual(before, after) {
			t.Fatalf("failed claim changed the pool:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("ClaimRemovesAndMarks", func(t *testing.T) {
		const part = "claim:eu"
		es := byID(entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour), entry("c", 30, 2*time.Second, time.Hour))
		mustEnqueue(t, p, part, pick(es, "a", "b", "c")...)
		res, err := p.Claim(ctx, part, 0, "m1", pick(es, "a", "b"))
		if err != nil || !res.OK || res.Missing != nil {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		for _, id := range []string{"a", "b"} {
			// Out of pool and enq; the claim leaves the member in watch,
			// for a watch scan to drop.
			if s := inSets(t, p, part, id); s != claimedSets {
				t.Fatalf("%s in pool/enq/watch: %v, want %v", id, s, claimedSets)
			}
			if w := membersOf(t, p, part, "watch", id); !reflect.DeepEqual(w, []string{member(es[id])}) {
				t.Fatalf("%s in watch as %q, want its member", id, w)
			}
			h := hash(t, p, part, id)
			if h["state"] != "claimed" || h["match"] != "m1" || h["m"] != member(es[id]) {
				t.Fatalf("hash of %s = %v", id, h)
			}
		}
		if s := inSets(t, p, part, "c"); s != [3]bool{true, true, true} {
			t.Fatalf("c: %v", s)
		}
		if n, _ := p.Size(ctx, part); n != 1 {
			t.Fatalf("size = %d, want 1", n)
		}
		res, err = p.Claim(ctx, part, 0, "m2", pick(es, "c", "a"))
		if err != nil || res.OK || !reflect.DeepEqual(res.Missing, []string{"a"}) {
			t.Fatalf("claim of an already claimed ticket = %+v, %v", res, err)
		}
		if h := hash(t, p, part, "a"); h["match"] != "m1" {
			t.Fatalf("losing claim overwrote the winner: %v", h)
		}
	})

	t.Run("StaleFence", func(t *testing.T) {
		const part = "fence:eu"
		es := byID(entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))
		mustEnqueue(t, p, part, pick(es, "a", "b")...)

		// No fence key yet: any token but 0 is stale.
		if _, err := p.Claim(ctx, part, 3, "m0", pick(es, "a")); !errors.Is(err, ErrStaleFence) {
			t.Fatalf("claim without fence key: err = %v, want ErrStaleFence", err)
		}
		if err := p.rdb.Set(ctx, p.FenceKey(part), 5, 0).Err(); err != nil {
			t.Fatal(err)
		}
		before := contents(t, p, part, "a", "b")
		for _, ids := range [][]string{{"a", "b"}, {"a", "ghost"}} {
			_, err := p.Claim(ctx, part, 4, "m1", pick(es, ids...))
			if !errors.Is(err, ErrStaleFence) {
				t.Fatalf("claim %v with token 4 of 5: err = %v, want ErrStaleFence", ids, err)
			}
		}
		if after := contents(t, p, part, "a", "b"); !reflect.DeepEqual(before, after) {
			t.Fatalf("stale claim changed the pool:\nbefore %v\nafter  %v", before, after)
		}
		if _, err := p.Claim(ctx, part, 6, "m1", pick(es, "a")); !errors.Is(err, ErrStaleFence) {
			t.Fatalf("token from the future: err = %v", err)
		}
		if res, err := p.Claim(ctx, part, 5, "m2", pick(es, "a")); err != nil || !res.OK {
			t.Fatalf("claim with current token: %+v %v", res, err)
		}
		if res, err := p.Claim(ctx, part, 0, "m3", pick(es, "b")); err != nil || !res.OK {
			t.Fatalf("unfenced claim: %+v %v", res, err)
		}
	})

	t.Run("CancelFirst", func(t *testing.T) {
		const part = "cf:eu"
		es := byID(entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))
		mustEnqueue(t, p, part, pick(es, "a", "b")...)
		rr, err := p.Remove(ctx, part, "a")
		if err != nil || rr != (RemoveResult{Removed: true}) {
			t.Fatalf("remove = %+v, %v", rr, err)
		}
		if s := inSets(t, p, part, "a"); s != [3]bool{} {
			t.Fatalf("a still in sets %v", s)
		}
		if h := hash(t, p, part, "a"); len(h) != 0 {
			t.Fatalf("hash left: %v", h)
		}
		res, err := p.Claim(ctx, part, 0, "m1", pick(es, "a", "b"))
		if err != nil || res.OK || !reflect.DeepEqual(res.Missing, []string{"a"}) {
			t.Fatalf("claim after cancel = %+v, %v", res, err)
		}
		if s := inSets(t, p, part, "b"); s != [3]bool{true, true, true} {
			t.Fatalf("b: %v", s)
		}
		rr, err = p.Remove(ctx, part, "a")
		if err != nil || rr != (RemoveResult{}) {
			t.Fatalf("second remove = %+v, %v", rr, err)
		}
	})

	t.Run("ClaimFirst", func(t *testing.T) {
		const part = "clf:eu"
		es := byID(entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))
		mustEnqueue(t, p, part, pick(es, "a", "b")...)
		if res, err := p.Claim(ctx, part, 0, "m-42", pick(es, "a", "b")); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		rr, err := p.Remove(ctx, part, "a")
		if err != nil || rr != (RemoveResult{ClaimedBy: "m-42"}) {
			t.Fatalf("remove after claim = %+v, %v", rr, err)
		}
		if h := hash(t, p, part, "a"); h["state"] != "claimed" {
			t.Fatalf("losing cancel touched the claimed hash: %v", h)
		}
		rr, err = p.Remove(ctx, part, "never-seen")
		if err != nil || rr != (RemoveResult{}) {
			t.Fatalf("remove of unknown = %+v, %v", rr, err)
		}
	})

	t.Run("RequeueRestoresScores", func(t *testing.T) {
		const part = "rq:eu"
		a := entry("a", 1234.5678901234567, -90*time.Second, 4*time.Minute)
		a.Activity = 0.1 + 0.2
		a.Estimated = true
		a.Heartbeat = t0.Add(3 * time.Second)
		b := entry("b", -17.25, 5*time.Millisecond, 5*time.Minute)
		c := entry("c", 1e-9, time.Second, 6*time.Minute)
		mustEnqueue(t, p, part, a, b, c)
		before, err := p.Oldest(ctx, part, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(before, scanned(a, b, c)) {
			t.Fatalf("oldest before = %+v", before)
		}
		// Watched, silent longest first (each last sign of life plus
		// hbTimeout, well before the deadlines): b (its enqueue), c (its
		// enqueue), a (its heartbeat).
		watchBefore := contents(t, p, part)["watch"]
		staleBefore, err := p.Watched(ctx, part, t0.Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		bHB, cHB := b, c
		bHB.Heartbeat, cHB.Heartbeat = b.Enqueue, c.Enqueue
		if !reflect.DeepEqual(staleBefore, []matcher.Entry{bHB, cHB, a}) {
			t.Fatalf("watched before = %+v", staleBefore)
		}
		// The claim names the entries as read from the pool.
		if res, err := p.Claim(ctx, part, 0, "m1", before[:2]); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		// Heartbeats are refused while claimed; the requeued entry (read
		// without its heartbeat) gets the one its hash kept.
		n, err := p.Requeue(ctx, part, before[:2], hashTTL, time.Time{}, hbTimeout)
		if err != nil || n != 2 {
			t.Fatalf("requeue = %d, %v; want 2", n, err)
		}
		after, err := p.Oldest(ctx, part, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("after requeue\n got  %+v\n want %+v", after, before)
		}
		if staleAfter, err := p.Watched(ctx, part, t0.Add(time.Hour), 10); err != nil || !reflect.DeepEqual(staleAfter, staleBefore) {
			t.Fatalf("heartbeats after requeue\n got  %+v, %v\n want %+v", staleAfter, err, staleBefore)
		}
		if watchAfter := contents(t, p, part)["watch"]; !reflect.DeepEqual(watchAfter, watchBefore) {
			t.Fatalf("watch scores after requeue\n got  %v\n want %v", watchAfter, watchBefore)
		}
		if sc, ok := zscore(t, p, part, "pool", member(a)); !ok || sc != a.Skill {
			t.Fatalf("skill score %v (%v), want exactly %v", sc, ok, a.Skill)
		}
		h := hash(t, p, part, "a")
		if h["state"] != "waiting" || h["match"] != "" {
			t.Fatalf("hash after requeue %v", h)
		}
		// Requeued tickets are claimable again; a second requeue of waiting
		// tickets re-adds nothing.
		if n, err := p.Requeue(ctx, part, before, hashTTL, time.Time{}, hbTimeout); err != nil || n != 0 {
			t.Fatalf("requeue of waiting tickets = %d, %v; want 0", n, err)
		}
		if res, err := p.Claim(ctx, part, 0, "m2", before); err != nil || !res.OK {
			t.Fatalf("claim after requeue = %+v, %v", res, err)
		}
	})

	t.Run("RequeueKeepsNewerHeartbeat", func(t *testing.T) {
		const part = "rqhb:eu"
		a := entry("a", 10, 0, time.Hour)
		mustEnqueue(t, p, part, a)
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(time.Minute), hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat %v %v", ok, err)
		}
		stale := a
		stale.Heartbeat = t0.Add(time.Second)
		if _, err := p.Requeue(ctx, part, []matcher.Entry{stale}, hashTTL, time.Time{}, hbTimeout); err != nil {
			t.Fatal(err)
		}
		got, _ := p.Watched(ctx, part, t0.Add(time.Hour), 10)
		if len(got) != 1 || !got[0].Heartbeat.Equal(t0.Add(time.Minute)) {
			t.Fatalf("heartbeat went backwards: %+v", got)
		}
		if at, want := watchOf(t, p, part, a), t0.Add(time.Minute+hbTimeout); !at.Equal(want) {
			t.Fatalf("watch score %v, want the newer heartbeat's %v", at, want)
		}
		if h := hash(t, p, part, "a"); h["hb"] != msTime(t0.Add(time.Minute)) {
			t.Fatalf("hash heartbeat went backwards: %v", h)
		}
	})

	t.Run("RequeueGivesALostTicketTheCallersHeartbeat", func(t *testing.T) {
		const part = "rqlost:eu"
		a, b := entry("a", 10, 0, time.Hour), entry("b", 11, time.Second, time.Hour)
		mustEnqueue(t, p, part, a, b)
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{a, b}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		// Redis loses a's keys while it is claimed; b's claimed hash stays.
		if err := p.rdb.Del(ctx, p.ticketKey(part, "a")).Err(); err != nil {
			t.Fatal(err)
		}
		now := t0.Add(10 * time.Minute)
		if _, err := p.Requeue(ctx, part, []matcher.Entry{a, b}, hashTTL, now, hbTimeout); err != nil {
			t.Fatal(err)
		}
		if got, err := p.Oldest(ctx, part, 10); err != nil || !reflect.DeepEqual(got, scanned(a, b)) {
			t.Fatalf("after requeue %+v, %v; want a, b", got, err)
		}
		// b has no heartbeat of its own: its last sign of life is its
		// enqueue.
		if wa, wb := watchOf(t, p, part, a), watchOf(t, p, part, b); !wa.Equal(now.Add(hbTimeout)) || !wb.Equal(b.Enqueue.Add(hbTimeout)) {
			t.Fatalf("after requeue a watched at %v, b at %v; want a at %v (lost), b at %v (its own)",
				wa, wb, now.Add(hbTimeout), b.Enqueue.Add(hbTimeout))
		}
		if got, err := p.Watched(ctx, part, t0.Add(time.Hour), 10); err != nil || !reflect.DeepEqual(got, []matcher.Entry{seenAt(b, b.Enqueue), seenAt(a, now)}) {
			t.Fatalf("watched after requeue %+v, %v; want b seen at its enqueue, a at %v", got, err, now)
		}
		if ha, hb := hash(t, p, part, "a")["hb"], hash(t, p, part, "b")["hb"]; ha != msTime(now) || hb != "" {
			t.Fatalf("hash heartbeats a=%q b=%q; want a=%q, b none", ha, hb, msTime(now))
		}
		// Without a time given, a lost ticket keeps the heartbeat it carries.
		if res, err := p.Claim(ctx, part, 0, "m2", []matcher.Entry{a}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		if err := p.rdb.Del(ctx, p.ticketKey(part, "a")).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Requeue(ctx, part, []matcher.Entry{a}, hashTTL, time.Time{}, hbTimeout); err != nil {
			t.Fatal(err)
		}
		// a carries none: its last sign of life is its enqueue.
		if wa := watchOf(t, p, part, a); !wa.Equal(a.Enqueue.Add(hbTimeout)) {
			t.Fatalf("after requeue without a time a watched at %v; want its own (enqueue) + timeout %v", wa, a.Enqueue.Add(hbTimeout))
		}
		if h := hash(t, p, part, "a"); h["hb"] != "" {
			t.Fatalf("after requeue without a time hash %v; want no heartbeat", h)
		}
	})

	t.Run("Heartbeat", func(t *testing.T) {
		const part = "hb:eu"
		a := entry("a", 10, 0, time.Hour)
		mustEnqueue(t, p, part, a)
		for _, at := range []time.Duration{10 * time.Second, 5 * time.Second} {
			ok, err := p.Heartbeat(ctx, part, "a", t0.Add(at), hbTimeout)
			if err != nil || !ok {
				t.Fatalf("heartbeat = %v, %v", ok, err)
			}
		}
		if w := watchOf(t, p, part, a); !w.Equal(t0.Add(10*time.Second + hbTimeout)) {
			t.Fatalf("watched at %v, want the later heartbeat plus the timeout", w)
		}
		if h := hash(t, p, part, "a"); h["hb"] != msTime(t0.Add(10*time.Second)) {
			t.Fatalf("hash %v, want the later heartbeat", h)
		}
		if ok, err := p.Heartbeat(ctx, part, "ghost", t0, hbTimeout); err != nil || ok {
			t.Fatalf("heartbeat of unknown = %v, %v", ok, err)
		}
		if n := p.rdb.Exists(ctx, p.ticketKey(part, "ghost")).Val(); n != 0 {
			t.Fatal("heartbeat created a hash for an unknown ticket")
		}
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{a}); err != nil || !res.OK {
			t.Fatalf("claim %+v %v", res, err)
		}
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(time.Minute), hbTimeout); err != nil || ok {
			t.Fatalf("heartbeat of claimed = %v, %v", ok, err)
		}
	})

	// A hash ends at the pool's now plus its TTL, stored in it (exp, with
	// the match id for a claim's mark); the key outlives that by
	// expirySlack, a safety net.
	t.Run("HashTTL", func(t *testing.T) {
		const part = "ttl:eu"
		mustEnqueue(t, p, part, entry("a", 10, 0, time.Hour))
		ends := func(want time.Duration, match string) {
			t.Helper()
			d, err := p.rdb.PTTL(ctx, p.ticketKey(part, "a")).Result()
			if err != nil {
				t.Fatal(err)
			}
			if d <= want+expirySlack-10*time.Second || d > want+expirySlack {
				t.Fatalf("key ttl = %v, want ~%v", d, want+expirySlack)
			}
			exp := msTime(t0.Add(want))
			if match != "" {
				exp += " " + match
			}
			if h := hash(t, p, part, "a"); h["exp"] != exp {
				t.Fatalf("hash ends at %q, want %q", h["exp"], exp)
			}
		}
		ends(hashTTL, "")
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{entry("a", 10, 0, time.Hour)}); err != nil || !res.OK {
			t.Fatalf("claim %+v %v", res, err)
		}
		ends(90*time.Second, "m1")
		if _, err := p.Requeue(ctx, part, []matcher.Entry{entry("a", 10, 0, time.Hour)}, 20*time.Minute, time.Time{}, hbTimeout); err != nil {
			t.Fatal(err)
		}
		ends(20*time.Minute, "")
	})

	t.Run("Oldest", func(t *testing.T) {
		const part = "old:eu"
		// Priority head starts make the effective enqueue order differ from
		// the insertion order.
		es := []matcher.Entry{
			entry("late", 50, 3*time.Second, time.Hour),
			entry("first", 40, -time.Minute, time.Hour),
			entry("mid", 10, time.Second, time.Hour),
			entry("second", 30, 0, time.Hour),
		}
		mustEnqueue(t, p, part, es...)
		got, err := p.Oldest(ctx, part, 3)
		if err != nil {
			t.Fatal(err)
		}
		if want := []matcher.Entry{es[1], es[3], es[2]}; !reflect.DeepEqual(got, want) {
			t.Fatalf("oldest\n got  %+v\n want %+v", got, want)
		}
		if got, _ := p.Oldest(ctx, "empty:eu", 3); len(got) != 0 {
			t.Fatalf("oldest of empty = %v", got)
		}
		if got, _ := p.Oldest(ctx, part, 0); len(got) != 0 {
			t.Fatalf("oldest n=0 = %v", got)
		}
	})

	t.Run("WatchedByDeadline", func(t *testing.T) {
		const part = "due:eu"
		// The oldest waiter is not the soonest due: watch is independent of
		// enq. No heartbeat timeout: each is watched at its deadline.
		mustEnqueueWith(t, p, part, 0,
			entry("a", 10, 0, 2*time.Second),
			entry("b", 20, -time.Minute, 10*time.Second),
			entry("c", 30, time.Second, -time.Second),
			entry("d", 40, 2*time.Second, time.Second),
		)
		now := t0.Add(2 * time.Second)
		got, err := p.Watched(ctx, part, now, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"c", "d", "a"}; !reflect.DeepEqual(ids(got), want) {
			t.Fatalf("watched = %v, want %v (deadline order, inclusive)", ids(got), want)
		}
		if !got[0].Deadline.Equal(t0.Add(-time.Second)) {
			t.Fatalf("deadline %v", got[0].Deadline)
		}
		if got, _ := p.Watched(ctx, part, now, 2); !reflect.DeepEqual(ids(got), []string{"c", "d"}) {
			t.Fatalf("watched limit 2 = %v", ids(got))
		}
		if got, _ := p.Watched(ctx, part, t0.Add(-2*time.Second), 10); len(got) != 0 {
			t.Fatalf("nothing due yet, got %v", ids(got))
		}
	})

	t.Run("Window", func(t *testing.T) {
		const part = "win:eu"
		mustEnqueue(t, p, part,
			entry("s50", 50, 0, time.Hour),
			entry("s20", 20, time.Second, time.Hour),
			entry("s40", 40, 2*time.Second, time.Hour),
			entry("s10", 10, 3*time.Second, time.Hour),
			entry("s30", 30, 4*time.Second, time.Hour),
			entry("s20.5", 20.5, 5*time.Second, time.Hour),
		)
		cases := []struct {
			lo, hi float64
			n      int
			want   []string
		}{
			{20, 40, 10, []string{"s20", "s20.5", "s30", "s40"}},
			{20, 40, 2, []string{"s20", "s20.5"}},
			{20.25, 39.99, 10, []string{"s20.5", "s30"}},
			{math.Inf(-1), math.Inf(1), 10, []string{"s10", "s20", "s20.5", "s30", "s40", "s50"}},
			{41, 49, 10, nil},
			{40, 20, 10, nil},
		}
		for _, c := range cases {
			got, err := p.Window(ctx, part, c.lo, c.hi, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !(len(g) == 0 && len(c.want) == 0) && !reflect.DeepEqual(g, c.want) {
				t.Errorf("window [%v,%v] n=%d = %v, want %v", c.lo, c.hi, c.n, g, c.want)
			}
		}
	})

	t.Run("Nearest", func(t *testing.T) {
		const part = "near:eu"
		mustEnqueue(t, p, part,
			entry("s10", 10, 0, time.Hour),
			entry("s31", 31, time.Second, time.Hour),
			entry("s32", 32, 2*time.Second, time.Hour),
			entry("s50", 50, 3*time.Second, time.Hour),
			entry("s28-late", 28, 5*time.Second, time.Hour),
			entry("s28-early", 28, -5*time.Second, time.Hour),
			entry("s60", 60, 4*time.Second, time.Hour),
		)
		cases := []struct {
			x    float64
			n    int
			want []string
		}{
			// Ties (28 and 32 are both 2 away from 30; 10 and 50 both 20)
			// go to the longer waiter.
			{30, 3, []string{"s31", "s28-early", "s32"}},
			{30, 5, []string{"s31", "s28-early", "s32", "s28-late", "s10"}},
			// Both closest above.
			{31, 2, []string{"s31", "s32"}},
			// Both closest below.
			{29, 2, []string{"s28-early", "s28-late"}},
			{0, 2, []string{"s10", "s28-early"}},
			{100, 2, []string{"s60", "s50"}},
			{45, 2, []string{"s50", "s32"}},
			{55, 2, []string{"s50", "s60"}},
		}
		for _, c := range cases {
			got, err := p.Nearest(ctx, part, c.x, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !reflect.DeepEqual(g, c.want) {
				t.Errorf("nearest %v n=%d = %v, want %v", c.x, c.n, g, c.want)
			}
		}
	})

	t.Run("VanishedHash", func(t *testing.T) {
		const part = "gone:eu"
		mustEnqueue(t, p, part, entry("a", 12.5, 0, time.Minute))
		if err := p.rdb.Del(ctx, p.ticketKey(part, "a")).Err(); err != nil {
			t.Fatal(err)
		}
		// The member carries every field: the scans of pool and enq read
		// the entry whole. A watch scan reads the hash for the heartbeat:
		// with the hash gone it reads the bare id, for the caller to
		// restore from the record.
		want := entry("a", 12.5, 0, time.Minute)
		for name, scan := range map[string]func() ([]matcher.Entry, error){
			"oldest":  func() ([]matcher.Entry, error) { return p.Oldest(ctx, part, 5) },
			"watched": func() ([]matcher.Entry, error) { return p.Watched(ctx, part, t0.Add(time.Hour), 5) },
			"window":  func() ([]matcher.Entry, error) { return p.Window(ctx, part, 0, 100, 5) },
			"nearest": func() ([]matcher.Entry, error) { return p.Nearest(ctx, part, 0, 5) },
		} {
			got, err := scan()
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if name == "watched" {
				w = matcher.Entry{TicketID: "a"}
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], w) {
				t.Errorf("%s: got %+v, want %+v", name, got, w)
			}
		}
		// The repair path: Remove by id alone cannot find the member (the
		// hash named it); RemoveEntry with the entry read cleans it up.
		if rr, err := p.Remove(ctx, part, "a"); err != nil || rr != (RemoveResult{}) {
			t.Fatalf("remove by id %+v %v", rr, err)
		}
		if s := inSets(t, p, part, "a"); s != [3]bool{true, true, true} {
			t.Fatalf("remove by id touched the member: %v", s)
		}
		if rr, err := p.RemoveEntry(ctx, []string{part}, want); err != nil || !rr.Removed {
			t.Fatalf("remove entry %+v %v", rr, err)
		}
		if s := inSets(t, p, part, "a"); s != [3]bool{} {
			t.Fatalf("after remove entry: sets %v", s)
		}
	})

	t.Run("MembersAndSize", func(t *testing.T) {
		const part = "mem:eu"
		const total = 2500
		// Pipelined scripts need Load (done above): EVALSHA cannot fall back
		// to EVAL inside a pipeline.
		pipe := p.rdb.Pipeline()
		want := map[string]matcher.Entry{}
		for i := range total {
			e := entry("m"+strconv.Itoa(i), float64(i%300), time.Duration(i)*time.Millisecond, time.Hour)
			want[e.TicketID] = e
			enqueueScript.EvalSha(ctx, pipe,
				append(p.setKeys(part), p.ticketKey(part, e.TicketID)),
				p.enqueueArgs(e, hashTTL, hbTimeout)...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := p.Size(ctx, part); err != nil || n != total {
			t.Fatalf("size = %d, %v", n, err)
		}
		got, err := p.Members(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range got {
			seen[e.TicketID] = true
			if e != want[e.TicketID] {
				t.Fatalf("member %+v, want %+v", e, want[e.TicketID])
			}
		}
		if len(got) != total || len(seen) != total {
			t.Fatalf("members: %d (%d distinct), want %d", len(got), len(seen), total)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		good := entry("a", 1, 0, time.Hour)
		nan := good
		nan.Skill = math.NaN()
		noDeadline := good
		noDeadline.Deadline = time.Time{}
		bar := good
		bar.TicketID = "a|b"
		for name, err := range map[string]error{
			"brace partition": func() error { _, err := p.Enqueue(ctx, "a}b", good, hashTTL, hbTimeout); return err }(),
			"empty partition": func() error { _, err := p.Remove(ctx, "", "a"); return err }(),
			"zero ttl":        func() error { _, err := p.Enqueue(ctx, "x:eu", good, 0, hbTimeout); return err }(),
			"nan skill":       func() error { _, err := p.Enqueue(ctx, "x:eu", nan, hashTTL, hbTimeout); return err }(),
			"no deadline": func() error {
				_, err := p.Requeue(ctx, "x:eu", []matcher.Entry{noDeadline}, hashTTL, time.Time{}, hbTimeout)
				return err
			}(),
			"no tickets":      func() error { _, err := p.Claim(ctx, "x:eu", 0, "m", nil); return err }(),
			"duplicate":       func() error { _, err := p.Claim(ctx, "x:eu", 0, "m", []matcher.Entry{good, good}); return err }(),
			"no match id":     func() error { _, err := p.Claim(ctx, "x:eu", 0, "", []matcher.Entry{good}); return err }(),
			"bar in id":       func() error { _, err := p.Enqueue(ctx, "x:eu", bar, hashTTL, hbTimeout); return err }(),
			"claim bar in id": func() error { _, err := p.Claim(ctx, "x:eu", 0, "m", []matcher.Entry{bar}); return err }(),
			"nan window":      func() error { _, err := p.Window(ctx, "x:eu", math.NaN(), 1, 1); return err }(),
		} {
			if err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		if n, _ := p.Size(ctx, "x:eu"); n != 0 {
			t.Fatalf("an invalid call wrote to the pool (%d)", n)
		}
	})

	t.Run("ErrorContext", func(t *testing.T) {
		if err := p.rdb.Set(ctx, p.FenceKey("ctx:eu"), 2, 0).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := p.Claim(ctx, "ctx:eu", 1, "m-9", []matcher.Entry{entry("a", 1, 0, time.Hour)})
		if want := "claim m-9 in ctx:eu: stale fence token"; err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})
}

func TestKeys(t *testing.T) {
	p := New(nil, "")
	for got, want := range map[string]string{
		p.Key("ranked:eu", "pool"):      "mg:{ranked:eu}:pool",
		p.FenceKey("ranked:eu"):         "mg:{ranked:eu}:fence",
		p.ticketKey("ranked:eu", "t1"):  "mg:{ranked:eu}:t:t1",
		New(nil, "x").Key("q", "watch"): "x:{q}:watch",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
	// The three sets every script takes, in its order, and the hash prefix
	// a scan adds; a sub-pool's keep the region's hash tag.
	for _, c := range []struct {
		got, want []string
	}{
		{p.setKeys("ranked:eu"), []string{"mg:{ranked:eu}:pool", "mg:{ranked:eu}:enq", "mg:{ranked:eu}:watch"}},
		{p.setKeys("ranked:eu/s2"), []string{"mg:{ranked:eu}:s2:pool", "mg:{ranked:eu}:s2:enq", "mg:{ranked:eu}:s2:watch"}},
		{p.scanKeys("ranked:eu/ov"), []string{"mg:{ranked:eu}:ov:pool", "mg:{ranked:eu}:ov:enq", "mg:{ranked:eu}:ov:watch", "mg:{ranked:eu}:t:"}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("keys %q, want %q", c.got, c.want)
		}
	}
}

// TestScriptFallback checks that a Redis that lost its script cache (a
// restart, a failover) is served through the EVAL fallback. Only on miniredis:
// flushing the shared Redis would break other packages' pipelines.
func TestScriptFallback(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Mini(t)
	p := New(rdb, "")
	if err := p.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, p, "fb:eu", entry("a", 1, 0, time.Hour))
	if res, err := p.Claim(ctx, "fb:eu", 0, "m", []matcher.Entry{entry("a", 1, 0, time.Hour)}); err != nil || !res.OK {
		t.Fatalf("claim %+v %v", res, err)
	}
}

func ExamplePool_Key() {
	p := New(nil, "")
	fmt.Println(p.Key("ranked:eu", "pool"))
	// Output: mg:{ranked:eu}:pool
}
