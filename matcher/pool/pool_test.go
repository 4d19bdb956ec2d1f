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
)

var t0 = time.UnixMilli(1_700_000_000_000)

const hashTTL = 10 * time.Minute

// entry builds a waiting ticket whose enqueue time and deadline are offsets
// from t0.
func entry(id string, skill float64, enq, dl time.Duration) Entry {
	return Entry{
		TicketID: id,
		UserID:   "u-" + id,
		Skill:    skill,
		Activity: 0.5,
		Enqueue:  t0.Add(enq),
		Deadline: t0.Add(dl),
	}
}

func mustEnqueue(tb testing.TB, p *Pool, partition string, es ...Entry) {
	tb.Helper()
	for _, e := range es {
		added, err := p.Enqueue(context.Background(), partition, e, hashTTL)
		if err != nil {
			tb.Fatalf("enqueue %s: %v", e.TicketID, err)
		}
		if !added {
			tb.Fatalf("enqueue %s: not added", e.TicketID)
		}
	}
}

func ids(es []Entry) []string {
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
	for _, s := range []string{"pool", "enq", "due", "hb"} {
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

func inSets(tb testing.TB, p *Pool, partition, id string) [3]bool {
	tb.Helper()
	var out [3]bool
	for i, s := range []string{"pool", "enq", "due"} {
		err := p.rdb.ZScore(context.Background(), p.Key(partition, s), id).Err()
		switch {
		case err == nil:
			out[i] = true
		case errors.Is(err, redis.Nil):
		default:
			tb.Fatal(err)
		}
	}
	return out
}

// TestPool is the pool's contract, run against miniredis and a real Redis.
func TestPool(t *testing.T) {
	redistest.Both(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		p := New(rdb, prefix, WithClaimTTL(90*time.Second))
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
		added, err := p.Enqueue(ctx, part, retry, hashTTL)
		if err != nil || added {
			t.Fatalf("second enqueue: added=%v err=%v, want false nil", added, err)
		}
		got, err := p.Oldest(ctx, part, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], first) {
			t.Fatalf("after retry got %+v, want %+v", got, first)
		}
		if h := hash(t, p, part, "a"); h["state"] != "waiting" || h["user"] != "u-a" {
			t.Fatalf("hash %v", h)
		}
	})

	t.Run("ClaimAllOrNothing", func(t *testing.T) {
		const part = "aon:eu"
		mustEnqueue(t, p, part, entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))
		before := contents(t, p, part, "a", "b", "ghost")
		res, err := p.Claim(ctx, part, 0, "m1", []string{"a", "ghost", "b"})
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
		mustEnqueue(t, p, part,
			entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour), entry("c", 30, 2*time.Second, time.Hour))
		res, err := p.Claim(ctx, part, 0, "m1", []string{"a", "b"})
		if err != nil || !res.OK || res.Missing != nil {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		for _, id := range []string{"a", "b"} {
			if s := inSets(t, p, part, id); s != [3]bool{} {
				t.Fatalf("%s still in pool/enq/due: %v", id, s)
			}
			h := hash(t, p, part, id)
			if h["state"] != "claimed" || h["match"] != "m1" || h["user"] != "u-"+id {
				t.Fatalf("hash of %s = %v", id, h)
			}
		}
		if s := inSets(t, p, part, "c"); s != [3]bool{true, true, true} {
			t.Fatalf("c: %v", s)
		}
		if n, _ := p.Size(ctx, part); n != 1 {
			t.Fatalf("size = %d, want 1", n)
		}
		res, err = p.Claim(ctx, part, 0, "m2", []string{"c", "a"})
		if err != nil || res.OK || !reflect.DeepEqual(res.Missing, []string{"a"}) {
			t.Fatalf("claim of an already claimed ticket = %+v, %v", res, err)
		}
		if h := hash(t, p, part, "a"); h["match"] != "m1" {
			t.Fatalf("losing claim overwrote the winner: %v", h)
		}
	})

	t.Run("StaleFence", func(t *testing.T) {
		const part = "fence:eu"
		mustEnqueue(t, p, part, entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))

		// No fence key yet: any token but 0 is stale.
		if _, err := p.Claim(ctx, part, 3, "m0", []string{"a"}); !errors.Is(err, ErrStaleFence) {
			t.Fatalf("claim without fence key: err = %v, want ErrStaleFence", err)
		}
		if err := p.rdb.Set(ctx, p.FenceKey(part), 5, 0).Err(); err != nil {
			t.Fatal(err)
		}
		before := contents(t, p, part, "a", "b")
		for _, ids := range [][]string{{"a", "b"}, {"a", "ghost"}} {
			_, err := p.Claim(ctx, part, 4, "m1", ids)
			if !errors.Is(err, ErrStaleFence) {
				t.Fatalf("claim %v with token 4 of 5: err = %v, want ErrStaleFence", ids, err)
			}
		}
		if after := contents(t, p, part, "a", "b"); !reflect.DeepEqual(before, after) {
			t.Fatalf("stale claim changed the pool:\nbefore %v\nafter  %v", before, after)
		}
		if _, err := p.Claim(ctx, part, 6, "m1", []string{"a"}); !errors.Is(err, ErrStaleFence) {
			t.Fatalf("token from the future: err = %v", err)
		}
		if res, err := p.Claim(ctx, part, 5, "m2", []string{"a"}); err != nil || !res.OK {
			t.Fatalf("claim with current token: %+v %v", res, err)
		}
		if res, err := p.Claim(ctx, part, 0, "m3", []string{"b"}); err != nil || !res.OK {
			t.Fatalf("unfenced claim: %+v %v", res, err)
		}
	})

	t.Run("CancelFirst", func(t *testing.T) {
		const part = "cf:eu"
		mustEnqueue(t, p, part, entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))
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
		res, err := p.Claim(ctx, part, 0, "m1", []string{"a", "b"})
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
		mustEnqueue(t, p, part, entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour))
		if res, err := p.Claim(ctx, part, 0, "m-42", []string{"a", "b"}); err != nil || !res.OK {
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
		if !reflect.DeepEqual(before, []Entry{a, b, c}) {
			t.Fatalf("oldest before = %+v", before)
		}
		if res, err := p.Claim(ctx, part, 0, "m1", []string{"a", "b"}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		// Heartbeats are refused while claimed; the requeued entry carries
		// the one read before the claim.
		n, err := p.Requeue(ctx, part, before[:2], hashTTL, time.Time{})
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
		if sc := p.rdb.ZScore(ctx, p.Key(part, "pool"), "a").Val(); sc != a.Skill {
			t.Fatalf("skill score %v, want exactly %v", sc, a.Skill)
		}
		h := hash(t, p, part, "a")
		if h["state"] != "waiting" || h["match"] != "" {
			t.Fatalf("hash after requeue %v", h)
		}
		// Requeued tickets are claimable again; a second requeue of waiting
		// tickets re-adds nothing.
		if n, err := p.Requeue(ctx, part, before, hashTTL, time.Time{}); err != nil || n != 0 {
			t.Fatalf("requeue of waiting tickets = %d, %v; want 0", n, err)
		}
		if res, err := p.Claim(ctx, part, 0, "m2", []string{"a", "b", "c"}); err != nil || !res.OK {
			t.Fatalf("claim after requeue = %+v, %v", res, err)
		}
	})

	t.Run("RequeueKeepsNewerHeartbeat", func(t *testing.T) {
		const part = "rqhb:eu"
		a := entry("a", 10, 0, time.Hour)
		mustEnqueue(t, p, part, a)
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("heartbeat %v %v", ok, err)
		}
		stale := a
		stale.Heartbeat = t0.Add(time.Second)
		if _, err := p.Requeue(ctx, part, []Entry{stale}, hashTTL, time.Time{}); err != nil {
			t.Fatal(err)
		}
		got, _ := p.Oldest(ctx, part, 1)
		if len(got) != 1 || !got[0].Heartbeat.Equal(t0.Add(time.Minute)) {
			t.Fatalf("heartbeat went backwards: %+v", got)
		}
	})

	t.Run("RequeueGivesALostTicketTheCallersHeartbeat", func(t *testing.T) {
		const part = "rqlost:eu"
		a, b := entry("a", 10, 0, time.Hour), entry("b", 11, time.Second, time.Hour)
		mustEnqueue(t, p, part, a, b)
		if res, err := p.Claim(ctx, part, 0, "m1", []string{"a", "b"}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		// Redis loses a's keys while it is claimed; b's claimed hash stays.
		if err := p.rdb.Del(ctx, p.ticketKey(part, "a")).Err(); err != nil {
			t.Fatal(err)
		}
		now := t0.Add(10 * time.Minute)
		if _, err := p.Requeue(ctx, part, []Entry{a, b}, hashTTL, now); err != nil {
			t.Fatal(err)
		}
		got, err := p.Oldest(ctx, part, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !got[0].Heartbeat.Equal(now) || !got[1].Heartbeat.Equal(b.Heartbeat) {
			t.Fatalf("after requeue %+v; want a seen at %v (lost), b at %v (its own)", got, now, b.Heartbeat)
		}
		// Without a time given, a lost ticket keeps the heartbeat it carries.
		if res, err := p.Claim(ctx, part, 0, "m2", []string{"a"}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		if err := p.rdb.Del(ctx, p.ticketKey(part, "a")).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Requeue(ctx, part, []Entry{a}, hashTTL, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if got, _ := p.Oldest(ctx, part, 1); len(got) != 1 || !got[0].Heartbeat.Equal(a.Heartbeat) {
			t.Fatalf("after requeue without a time %+v; want its own heartbeat %v", got, a.Heartbeat)
		}
	})

	t.Run("Heartbeat", func(t *testing.T) {
		const part = "hb:eu"
		mustEnqueue(t, p, part, entry("a", 10, 0, time.Hour))
		for _, at := range []time.Duration{10 * time.Second, 5 * time.Second} {
			ok, err := p.Heartbeat(ctx, part, "a", t0.Add(at))
			if err != nil || !ok {
				t.Fatalf("heartbeat = %v, %v", ok, err)
			}
		}
		got, _ := p.Oldest(ctx, part, 1)
		if len(got) != 1 || !got[0].Heartbeat.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("heartbeat = %+v, want the later one", got)
		}
		if ok, err := p.Heartbeat(ctx, part, "ghost", t0); err != nil || ok {
			t.Fatalf("heartbeat of unknown = %v, %v", ok, err)
		}
		if n := p.rdb.Exists(ctx, p.ticketKey(part, "ghost")).Val(); n != 0 {
			t.Fatal("heartbeat created a hash for an unknown ticket")
		}
		if res, err := p.Claim(ctx, part, 0, "m1", []string{"a"}); err != nil || !res.OK {
			t.Fatalf("claim %+v %v", res, err)
		}
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(time.Minute)); err != nil || ok {
			t.Fatalf("heartbeat of claimed = %v, %v", ok, err)
		}
	})

	t.Run("HashTTL", func(t *testing.T) {
		const part = "ttl:eu"
		mustEnqueue(t, p, part, entry("a", 10, 0, time.Hour))
		ttl := func() time.Duration {
			d, err := p.rdb.PTTL(ctx, p.ticketKey(part, "a")).Result()
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		if d := ttl(); d <= hashTTL-10*time.Second || d > hashTTL {
			t.Fatalf("ttl after enqueue = %v, want ~%v", d, hashTTL)
		}
		if res, err := p.Claim(ctx, part, 0, "m1", []string{"a"}); err != nil || !res.OK {
			t.Fatalf("claim %+v %v", res, err)
		}
		if d := ttl(); d <= 80*time.Second || d > 90*time.Second {
			t.Fatalf("ttl after claim = %v, want ~90s", d)
		}
		if _, err := p.Requeue(ctx, part, []Entry{entry("a", 10, 0, time.Hour)}, 20*time.Minute, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if d := ttl(); d <= 19*time.Minute || d > 20*time.Minute {
			t.Fatalf("ttl after requeue = %v, want ~20m", d)
		}
	})

	t.Run("Oldest", func(t *testing.T) {
		const part = "old:eu"
		// Priority head starts make the effective enqueue order differ from
		// the insertion order.
		es := []Entry{
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
		if want := []Entry{es[1], es[3], es[2]}; !reflect.DeepEqual(got, want) {
			t.Fatalf("oldest\n got  %+v\n want %+v", got, want)
		}
		if got, _ := p.Oldest(ctx, "empty:eu", 3); len(got) != 0 {
			t.Fatalf("oldest of empty = %v", got)
		}
		if got, _ := p.Oldest(ctx, part, 0); len(got) != 0 {
			t.Fatalf("oldest n=0 = %v", got)
		}
	})

	t.Run("Due", func(t *testing.T) {
		const part = "due:eu"
		// The oldest waiter is not the soonest due: due is independent of enq.
		mustEnqueue(t, p, part,
			entry("a", 10, 0, 2*time.Second),
			entry("b", 20, -time.Minute, 10*time.Second),
			entry("c", 30, time.Second, -time.Second),
			entry("d", 40, 2*time.Second, time.Second),
		)
		now := t0.Add(2 * time.Second)
		got, err := p.Due(ctx, part, now, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"c", "d", "a"}; !reflect.DeepEqual(ids(got), want) {
			t.Fatalf("due = %v, want %v (deadline order, inclusive)", ids(got), want)
		}
		if !got[0].Deadline.Equal(t0.Add(-time.Second)) {
			t.Fatalf("deadline %v", got[0].Deadline)
		}
		if got, _ := p.Due(ctx, part, now, 2); !reflect.DeepEqual(ids(got), []string{"c", "d"}) {
			t.Fatalf("due limit 2 = %v", ids(got))
		}
		if got, _ := p.Due(ctx, part, t0.Add(-2*time.Second), 10); len(got) != 0 {
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
		want := Entry{TicketID: "a", Skill: 12.5, Enqueue: t0, Deadline: t0.Add(time.Minute)}
		for name, scan := range map[string]func() ([]Entry, error){
			"oldest":  func() ([]Entry, error) { return p.Oldest(ctx, part, 5) },
			"due":     func() ([]Entry, error) { return p.Due(ctx, part, t0.Add(time.Hour), 5) },
			"window":  func() ([]Entry, error) { return p.Window(ctx, part, 0, 100, 5) },
			"nearest": func() ([]Entry, error) { return p.Nearest(ctx, part, 0, 5) },
		} {
			got, err := scan()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
				t.Errorf("%s: got %+v, want %+v", name, got, want)
			}
		}
		// The repair path: Remove cleans the member up.
		if rr, err := p.Remove(ctx, part, "a"); err != nil || !rr.Removed {
			t.Fatalf("remove %+v %v", rr, err)
		}
	})

	t.Run("MembersAndSize", func(t *testing.T) {
		const part = "mem:eu"
		const total = 2500
		// Pipelined scripts need Load (done above): EVALSHA cannot fall back
		// to EVAL inside a pipeline.
		pipe := p.rdb.Pipeline()
		for i := range total {
			e := entry("m"+strconv.Itoa(i), float64(i%300), time.Duration(i)*time.Millisecond, time.Hour)
			enqueueScript.EvalSha(ctx, pipe,
				append(p.setKeys(part), p.ticketKey(part, e.TicketID)),
				append(entryArgs(e), ms(hashTTL))...)
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
		for _, id := range got {
			seen[id] = true
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
		for name, err := range map[string]error{
			"brace partition": func() error { _, err := p.Enqueue(ctx, "a}b", good, hashTTL); return err }(),
			"empty partition": func() error { _, err := p.Remove(ctx, "", "a"); return err }(),
			"zero ttl":        func() error { _, err := p.Enqueue(ctx, "x:eu", good, 0); return err }(),
			"nan skill":       func() error { _, err := p.Enqueue(ctx, "x:eu", nan, hashTTL); return err }(),
			"no deadline":     func() error { _, err := p.Requeue(ctx, "x:eu", []Entry{noDeadline}, hashTTL, time.Time{}); return err }(),
			"no tickets":      func() error { _, err := p.Claim(ctx, "x:eu", 0, "m", nil); return err }(),
			"duplicate":       func() error { _, err := p.Claim(ctx, "x:eu", 0, "m", []string{"a", "a"}); return err }(),
			"no match id":     func() error { _, err := p.Claim(ctx, "x:eu", 0, "", []string{"a"}); return err }(),
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
		_, err := p.Claim(ctx, "ctx:eu", 1, "m-9", []string{"a"})
		if want := "claim m-9 in ctx:eu: stale fence token"; err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})
}

func TestKeys(t *testing.T) {
	p := New(nil, "")
	for got, want := range map[string]string{
		p.Key("ranked:eu", "pool"):     "mg:{ranked:eu}:pool",
		p.FenceKey("ranked:eu"):        "mg:{ranked:eu}:fence",
		p.ticketKey("ranked:eu", "t1"): "mg:{ranked:eu}:t:t1",
		New(nil, "x").Key("q", "due"):  "x:{q}:due",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
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
	if res, err := p.Claim(ctx, "fb:eu", 0, "m", []string{"a"}); err != nil || !res.OK {
		t.Fatalf("claim %+v %v", res, err)
	}
}

func ExamplePool_Key() {
	p := New(nil, "")
	fmt.Println(p.Key("ranked:eu", "pool"))
	// Output: mg:{ranked:eu}:pool
}
