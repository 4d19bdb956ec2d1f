package pool

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// A member is the entry: parseMember reads back every field member wrote,
// whatever the user id holds, and formatting what it read gives the member
// back, so that the entries a scan read name their members in a claim.
func TestMemberRoundTrip(t *testing.T) {
	doc := matcher.Entry{TicketID: "t1", UserID: "u1", Skill: 1500, Activity: 0.5, Enqueue: t0, Deadline: t0.Add(5 * time.Minute)}
	if got, want := member(doc), "t1|1500|1700000000000|1700000300000|0|0.5|u1"; got != want {
		t.Fatalf("member = %q, want %q", got, want)
	}
	bars := entry("t2", -17.25, time.Second, time.Hour)
	bars.UserID = "a|b c |d"
	tenth := 0.1 // a variable: a constant 0.1 + 0.2 is exactly 0.3
	bars.Activity = tenth + 0.2
	bars.Estimated = true
	if got, want := member(bars), "t2|-17.25|1700000001000|1700003600000|1|0.30000000000000004|a|b c |d"; got != want {
		t.Fatalf("member = %q, want %q", got, want)
	}

	cases := []matcher.Entry{doc, bars}
	for _, c := range []struct {
		user      string
		skill     float64
		activity  float64
		estimated bool
	}{
		{"plain", 1234.5678901234567, 0, false},
		{" leading and trailing ", -0.000123, 1, true},
		{"|", 1e-9, 0.25, false},
		{"||", -1e21, -3.5, true},
		{"", 0, 0, false},
		{"user with | bar and spaces", 1e21, 0.999, true},
		{"ünïcode|✓", -5, 0.125, false},
	} {
		e := entry("x", c.skill, -90*time.Second, 4*time.Minute)
		e.UserID, e.Activity, e.Estimated = c.user, c.activity, c.estimated
		cases = append(cases, e)
	}
	// Before 1970 too: the times are signed milliseconds.
	early := entry("early", 3, 0, time.Hour)
	early.Enqueue, early.Deadline = time.UnixMilli(-1500), time.UnixMilli(-500)
	cases = append(cases, early)

	for _, e := range cases {
		m := member(e)
		got, err := parseMember(m)
		if err != nil {
			t.Fatalf("parseMember(%q): %v", m, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("parseMember(member(e)) = %+v, want %+v", got, e)
		}
		if back := member(got); back != m {
			t.Errorf("member(parseMember(%q)) = %q", m, back)
		}
		if id := memberID(m); id != e.TicketID {
			t.Errorf("memberID(%q) = %q, want %q", m, id, e.TicketID)
		}
	}

	// Members written by hand in member's form come back as they are.
	for _, m := range []string{
		"t1|1500|1700000000000|1700000300000|0|0.5|u1",
		"x|-3.5|1|2|1|0|user | with | bars",
		"y|0.1|1700000000000|1700000000001|0|1|",
		"z|-0.5|1700000000000|1700000000001|1|0.75| ",
	} {
		e, err := parseMember(m)
		if err != nil {
			t.Fatalf("parseMember(%q): %v", m, err)
		}
		if back := member(e); back != m {
			t.Errorf("member(parseMember(%q)) = %q", m, back)
		}
	}
	if e, _ := parseMember("x|-3.5|1|2|1|0|user | with | bars"); e.UserID != "user | with | bars" || e.Skill != -3.5 || !e.Estimated {
		t.Errorf("fields of a member with bars in its user id: %+v", e)
	}

	for _, m := range []string{
		"",
		"t1",                                    // a bare ticket id
		"t1|1500",                               // two fields
		"t1|1500|1700000000000|1700000300000|0", // five
		"t1|1500|1700000000000|1700000300000|0|0.5", // six: no user id
		"t1|abc|1700000000000|1700000300000|0|0.5|u1",
		"t1|1500|soon|1700000300000|0|0.5|u1",
		"t1|1500|1700000000000|later|0|0.5|u1",
		"t1|1500|1700000000000|1700000300000|0|high|u1",
	} {
		if e, err := parseMember(m); err == nil {
			t.Errorf("parseMember(%q) = %+v, want an error", m, e)
		}
	}
	if id := memberID("bare"); id != "bare" {
		t.Errorf("memberID of a bare id = %q", id)
	}

	good := entry("a", 1, 0, time.Hour)
	if err := checkEntry(good); err != nil {
		t.Fatalf("checkEntry(%+v): %v", good, err)
	}
	for _, id := range []string{"a|b", "|", "a|", "|a"} {
		bad := good
		bad.TicketID = id
		if err := checkEntry(bad); err == nil {
			t.Errorf("checkEntry accepted ticket id %q", id)
		}
	}
	for _, id := range []string{"a b", "a:b", "a/b", "{a}"} {
		ok := good
		ok.TicketID = id
		if err := checkEntry(ok); err != nil {
			t.Errorf("checkEntry refused ticket id %q: %v", id, err)
		}
	}
}

// TestMemberLayout covers what naming a ticket by its member changes: claims
// and removals find an entry by all of its fields, requeue replaces another
// member of the ticket, scans read a bare-id member as an entry to restore,
// and heartbeats move the member's watch score. Against miniredis and a real
// Redis.
func TestMemberLayout(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		p := New(rdb, prefix, WithClaimTTL(90*time.Second), WithClock(atT0))
		if err := p.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		testMemberLayout(t, p)
	})
}

// zadd writes member m into the three sets of a partition with the scores
// given (pool, enq, watch), as a layout without the fields left it.
func zadd(tb testing.TB, p *Pool, partition, m string, scores [3]float64) {
	tb.Helper()
	for i, s := range []string{"pool", "enq", "watch"} {
		if err := p.rdb.ZAdd(context.Background(), p.Key(partition, s), redis.Z{Score: scores[i], Member: m}).Err(); err != nil {
			tb.Fatal(err)
		}
	}
}

// only checks that each of the three sets of a partition names the ticket
// by exactly the member m (none when m is "").
func only(tb testing.TB, p *Pool, partition, id, m string) {
	tb.Helper()
	for _, s := range []string{"pool", "enq", "watch"} {
		var want []string
		if m != "" {
			want = []string{m}
		}
		if got := membersOf(tb, p, partition, s, id); !reflect.DeepEqual(got, want) {
			tb.Fatalf("%s of %s names %s by %q, want %q", s, partition, id, got, want)
		}
	}
}

// claimedOnly checks that a claim took the ticket of member m out of pool
// and enq and left m, alone, in watch.
func claimedOnly(tb testing.TB, p *Pool, partition, id, m string) {
	tb.Helper()
	for _, s := range []string{"pool", "enq", "watch"} {
		var want []string
		if s == "watch" {
			want = []string{m}
		}
		if got := membersOf(tb, p, partition, s, id); !reflect.DeepEqual(got, want) {
			tb.Fatalf("%s of %s names claimed %s by %q, want %q", s, partition, id, got, want)
		}
	}
}

func ms64(t time.Time) float64 { return float64(t.UnixMilli()) }

func testMemberLayout(t *testing.T, p *Pool) {
	ctx := context.Background()

	t.Run("ClaimWithOtherFieldsIsMissing", func(t *testing.T) {
		const part = "mclaim:eu"
		a, b := entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour)
		a.Estimated = true
		mustEnqueue(t, p, part, a, b)
		before := contents(t, p, part, "a", "b")
		for name, change := range map[string]func(e *matcher.Entry){
			"skill":     func(e *matcher.Entry) { e.Skill = 11 },
			"user":      func(e *matcher.Entry) { e.UserID = "u-b" },
			"activity":  func(e *matcher.Entry) { e.Activity = 0.75 },
			"estimated": func(e *matcher.Entry) { e.Estimated = false },
			"enqueue":   func(e *matcher.Entry) { e.Enqueue = e.Enqueue.Add(time.Millisecond) },
			"deadline":  func(e *matcher.Entry) { e.Deadline = e.Deadline.Add(time.Second) },
		} {
			other := a
			change(&other)
			res, err := p.Claim(ctx, part, 0, "m-"+name, []matcher.Entry{b, other})
			if err != nil || res.OK || !reflect.DeepEqual(res.Missing, []string{"a"}) {
				t.Fatalf("claim with another %s = %+v, %v; want a missing", name, res, err)
			}
			if after := contents(t, p, part, "a", "b"); !reflect.DeepEqual(before, after) {
				t.Fatalf("claim with another %s changed the pool:\nbefore %v\nafter  %v", name, before, after)
			}
		}

		// In a batch too; the heartbeat is no field of the member, so an
		// entry carrying one is the pool's.
		other := a
		other.Skill = 12
		withHB := a
		withHB.Heartbeat = t0.Add(time.Hour)
		got, _, err := p.ClaimMany(ctx, part, 0, []ClaimRequest{
			{MatchID: "m1", Entries: []matcher.Entry{other, b}},
			{MatchID: "m2", Entries: []matcher.Entry{withHB, b}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Err != nil || !reflect.DeepEqual(got[0].ClaimResult, ClaimResult{Missing: []string{"a"}}) {
			t.Fatalf("claim with another skill = %+v, want a missing", got[0])
		}
		if got[1].Err != nil || !got[1].OK {
			t.Fatalf("claim of the pool's entries = %+v", got[1])
		}
		for id, e := range map[string]matcher.Entry{"a": a, "b": b} {
			if h := hash(t, p, part, id); h["state"] != "claimed" || h["match"] != "m2" {
				t.Fatalf("hash of %s = %v, want claimed by m2", id, h)
			}
			claimedOnly(t, p, part, id, member(e))
		}
	})

	t.Run("RemoveEntryWithoutHash", func(t *testing.T) {
		// The hash names the ticket's member: once it is gone (expired,
		// lost) RemoveAny, which knows the ticket by its id alone, cannot
		// find the entry and leaves it in the pool for ever. That is why
		// RemoveEntry exists: it names the member itself.
		const part = "mrm:eu"
		a, b := entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour)
		mustEnqueue(t, p, part, a, b)
		if err := p.rdb.Del(ctx, p.ticketKey(part, "a")).Err(); err != nil {
			t.Fatal(err)
		}
		if rr, err := p.RemoveAny(ctx, []string{part}, "a"); err != nil || rr != (RemoveResult{}) {
			t.Fatalf("remove by id = %+v, %v; want nothing removed", rr, err)
		}
		only(t, p, part, "a", member(a))
		// An entry with other fields does not name it either.
		other := a
		other.Skill = 99
		if rr, err := p.RemoveEntry(ctx, []string{part}, other); err != nil || rr != (RemoveResult{}) {
			t.Fatalf("remove of another entry = %+v, %v; want nothing removed", rr, err)
		}
		only(t, p, part, "a", member(a))

		if rr, err := p.RemoveEntry(ctx, []string{part}, a); err != nil || rr != (RemoveResult{Removed: true}) {
			t.Fatalf("remove entry = %+v, %v", rr, err)
		}
		only(t, p, part, "a", "")
		only(t, p, part, "b", member(b))
		if h := hash(t, p, part, "b"); h["state"] != "waiting" || h["m"] != member(b) {
			t.Fatalf("hash of b = %v", h)
		}
		// With its hash, it is a Remove.
		if rr, err := p.RemoveEntry(ctx, []string{part}, b); err != nil || rr != (RemoveResult{Removed: true}) {
			t.Fatalf("remove entry with its hash = %+v, %v", rr, err)
		}
		only(t, p, part, "b", "")
		if h := hash(t, p, part, "b"); len(h) != 0 {
			t.Fatalf("hash left: %v", h)
		}
		// A claimed one says who won, and keeps its hash.
		c := entry("c", 30, 0, time.Hour)
		mustEnqueue(t, p, part, c)
		if res, err := p.Claim(ctx, part, 0, "m-c", []matcher.Entry{c}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		if rr, err := p.RemoveEntry(ctx, []string{part}, c); err != nil || rr != (RemoveResult{ClaimedBy: "m-c"}) {
			t.Fatalf("remove entry of a claimed ticket = %+v, %v", rr, err)
		}
		if h := hash(t, p, part, "c"); h["state"] != "claimed" {
			t.Fatalf("remove touched the claimed hash: %v", h)
		}

		// Wherever a sharded queue's entry waits.
		s0, ov := "mrm2:eu/s0", "mrm2:eu/ov"
		d := entry("d", 40, 0, time.Hour)
		mustEnqueue(t, p, s0, d)
		if moved, err := p.Promote(ctx, s0, ov, t0, 10); err != nil || !reflect.DeepEqual(moved, []string{"d"}) {
			t.Fatalf("promote = %v, %v", moved, err)
		}
		if err := p.rdb.Del(ctx, p.ticketKey(ov, "d")).Err(); err != nil {
			t.Fatal(err)
		}
		both := []string{s0, ov}
		if rr, err := p.RemoveAny(ctx, both, "d"); err != nil || rr.Removed {
			t.Fatalf("remove by id = %+v, %v; want nothing removed", rr, err)
		}
		only(t, p, ov, "d", member(d))
		if rr, err := p.RemoveEntry(ctx, both, d); err != nil || !rr.Removed {
			t.Fatalf("remove entry from the overflow pool = %+v, %v", rr, err)
		}
		only(t, p, ov, "d", "")
		only(t, p, s0, "d", "")
	})

	t.Run("RequeueReplacesOtherMember", func(t *testing.T) {
		const part = "mrq:eu"
		a := entry("a", 10, 0, time.Hour)
		mustEnqueue(t, p, part, a)
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(time.Minute), hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat = %v, %v", ok, err)
		}
		// The same ticket with another deadline (read elsewhere): its hash
		// names the old member.
		a2 := a
		a2.Deadline = t0.Add(2 * time.Hour)
		n, err := p.Requeue(ctx, part, []matcher.Entry{a2}, hashTTL, time.Time{}, hbTimeout)
		if err != nil {
			t.Fatal(err)
		}
		// The entry a2 was not in the pool (a was).
		if n != 1 {
			t.Fatalf("requeue = %d, want 1", n)
		}
		only(t, p, part, "a", member(a2))
		// The heartbeat the hash kept carries over to the new member: it
		// is watched a timeout after it, not after its enqueue.
		if w := watchOf(t, p, part, a2); !w.Equal(t0.Add(time.Minute + hbTimeout)) {
			t.Fatalf("watch score %v, want %v", w, t0.Add(time.Minute+hbTimeout))
		}
		if h := hash(t, p, part, "a"); h["m"] != member(a2) || h["state"] != "waiting" || h["hb"] != msTime(t0.Add(time.Minute)) {
			t.Fatalf("hash %v", h)
		}
		if got, err := p.Oldest(ctx, part, 10); err != nil || !reflect.DeepEqual(got, []matcher.Entry{a2}) {
			t.Fatalf("oldest = %+v, %v; want a2 alone", got, err)
		}
		if n, _ := p.Size(ctx, part); n != 1 {
			t.Fatalf("size = %d, want 1", n)
		}
		// Requeued again as it is, nothing changes and nothing is added.
		before := contents(t, p, part, "a")
		if n, err := p.Requeue(ctx, part, []matcher.Entry{a2}, hashTTL, time.Time{}, hbTimeout); err != nil || n != 0 {
			t.Fatalf("second requeue = %d, %v; want 0", n, err)
		}
		if after := contents(t, p, part, "a"); !reflect.DeepEqual(before, after) {
			t.Fatalf("second requeue changed the pool:\nbefore %v\nafter  %v", before, after)
		}
		// A claimed ticket's old member is left in watch alone; requeue
		// with other fields removes it from there too, and leaves one.
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{a2}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		claimedOnly(t, p, part, "a", member(a2))
		a3 := a2
		a3.Skill = 11
		if _, err := p.Requeue(ctx, part, []matcher.Entry{a3}, hashTTL, time.Time{}, hbTimeout); err != nil {
			t.Fatal(err)
		}
		only(t, p, part, "a", member(a3))
		if h := hash(t, p, part, "a"); h["m"] != member(a3) || h["state"] != "waiting" || h["match"] != "" {
			t.Fatalf("hash after requeue of the claimed %v", h)
		}
	})

	t.Run("RequeueRemovesBareID", func(t *testing.T) {
		const part = "mbare:eu"
		a := entry("a", 10, 0, time.Hour)
		// A ticket of a layout without the fields: a bare id and no hash.
		zadd(t, p, part, "a", [3]float64{a.Skill, ms64(a.Enqueue), ms64(a.Deadline)})
		if got, err := p.Members(ctx, part); err != nil || !reflect.DeepEqual(got, []matcher.Entry{{TicketID: "a"}}) {
			t.Fatalf("members = %+v, %v; want the bare id", got, err)
		}
		now := t0.Add(10 * time.Minute)
		n, err := p.Requeue(ctx, part, []matcher.Entry{a}, hashTTL, now, hbTimeout)
		if err != nil || n != 1 {
			t.Fatalf("requeue = %d, %v; want 1 (a bare id is no entry)", n, err)
		}
		only(t, p, part, "a", member(a))
		for _, s := range []string{"pool", "enq", "watch"} {
			if _, ok := zscore(t, p, part, s, "a"); ok {
				t.Fatalf("bare id left in %s", s)
			}
		}
		// Its hash was lost with its heartbeats: seen at the caller's time.
		if h := hash(t, p, part, "a"); h["hb"] != msTime(now) {
			t.Fatalf("hash %v, want hb %s", h, msTime(now))
		}
		if w := watchOf(t, p, part, a); !w.Equal(now.Add(hbTimeout)) {
			t.Fatalf("watch score %v, want %v", w, now.Add(hbTimeout))
		}
		if got, err := p.Members(ctx, part); err != nil || !reflect.DeepEqual(got, scanned(a)) {
			t.Fatalf("members = %+v, %v; want a", got, err)
		}

		// A bare id beside a member the hash names: both go.
		b := entry("b", 20, time.Second, time.Hour)
		mustEnqueue(t, p, part, b)
		zadd(t, p, part, "b", [3]float64{b.Skill, ms64(b.Enqueue), ms64(b.Deadline)})
		b2 := b
		b2.UserID = "u-b2"
		if _, err := p.Requeue(ctx, part, []matcher.Entry{b2}, hashTTL, time.Time{}, hbTimeout); err != nil {
			t.Fatal(err)
		}
		only(t, p, part, "b", member(b2))
		only(t, p, part, "a", member(a))
		if n, _ := p.Size(ctx, part); n != 2 {
			t.Fatalf("size = %d, want 2", n)
		}
	})

	t.Run("RemoveEntryOfBareID", func(t *testing.T) {
		// A member that is a bare ticket id is read as an entry without
		// fields; RemoveEntry of that entry removes it, hash or no hash.
		const part = "mrmbare:eu"
		zadd(t, p, part, "a", [3]float64{10, ms64(t0), ms64(t0.Add(time.Hour))})
		b := entry("b", 20, time.Second, time.Hour)
		mustEnqueue(t, p, part, b)
		if rr, err := p.RemoveAny(ctx, []string{part}, "a"); err != nil || rr != (RemoveResult{}) {
			t.Fatalf("remove by id = %+v, %v; want nothing removed", rr, err)
		}
		only(t, p, part, "a", "a")
		read, err := p.Oldest(ctx, part, 10)
		if err != nil || len(read) != 2 || read[0] != (matcher.Entry{TicketID: "a"}) {
			t.Fatalf("oldest = %+v, %v", read, err)
		}
		if rr, err := p.RemoveEntry(ctx, []string{part}, read[0]); err != nil || rr != (RemoveResult{Removed: true}) {
			t.Fatalf("remove entry of a bare id = %+v, %v", rr, err)
		}
		only(t, p, part, "a", "")
		only(t, p, part, "b", member(b))
		// With a hash naming its member, the bare id goes the same way.
		zadd(t, p, part, "b", [3]float64{20, ms64(b.Enqueue), ms64(b.Deadline)})
		if rr, err := p.RemoveEntry(ctx, []string{part}, matcher.Entry{TicketID: "b"}); err != nil || !rr.Removed {
			t.Fatalf("remove entry of b's bare id = %+v, %v", rr, err)
		}
		if got := membersOf(t, p, part, "pool", "b"); len(got) > 1 {
			t.Fatalf("b still named twice: %q", got)
		}
	})

	t.Run("ScanBareID", func(t *testing.T) {
		const part = "mscan:eu"
		b := entry("b", 20, time.Second, time.Hour)
		mustEnqueue(t, p, part, b)
		// Watched at t0+30m, after b (its enqueue plus hbTimeout).
		zadd(t, p, part, "a", [3]float64{10, ms64(t0), ms64(t0.Add(30 * time.Minute))})
		bare := matcher.Entry{TicketID: "a"}
		bHB := b
		bHB.Heartbeat = b.Enqueue

		got, err := p.ScanMany(ctx, part, []Scan{
			OldestScan(10),
			WatchScan(t0.Add(time.Hour), 10),
			WatchScan(t0.Add(10*time.Minute), 10),
			NearestScan(10, 5),
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range [][]matcher.Entry{
			{bare, b},   // wait order
			{bHB, bare}, // watch order; a bare id has no heartbeat
			{bHB},       // a not watched yet
			{b},         // closest to 10: a bare id has no skill, and is no candidate
		} {
			if !reflect.DeepEqual(got[i], want) {
				t.Errorf("scan %d: got %+v, want %+v", i, got[i], want)
			}
		}
		if got[0][0].UserID != "" || got[1][1].UserID != "" {
			t.Fatalf("a bare id read with a user: %+v / %+v", got[0][0], got[1][1])
		}
		// The single calls too.
		if es, err := p.Oldest(ctx, part, 10); err != nil || !reflect.DeepEqual(es, []matcher.Entry{bare, b}) {
			t.Fatalf("oldest = %+v, %v", es, err)
		}
		if es, err := p.Watched(ctx, part, t0.Add(time.Hour), 10); err != nil || !reflect.DeepEqual(es, []matcher.Entry{bHB, bare}) {
			t.Fatalf("watched = %+v, %v", es, err)
		}
		if es, err := p.Window(ctx, part, 0, 100, 10); err != nil || !reflect.DeepEqual(es, []matcher.Entry{bare, b}) {
			t.Fatalf("window = %+v, %v", es, err)
		}
		if es, err := p.Members(ctx, part); err != nil || !reflect.DeepEqual(byID(es...), byID(bare, b)) || len(es) != 2 {
			t.Fatalf("members = %+v, %v", es, err)
		}
	})

	t.Run("Heartbeat", func(t *testing.T) {
		const part = "mhb:eu"
		a, b := entry("a", 10, 0, time.Hour), entry("b", 20, time.Second, time.Hour)
		mustEnqueue(t, p, part, a, b)
		if w := watchOf(t, p, part, a); !w.Equal(a.Enqueue.Add(hbTimeout)) {
			t.Fatalf("watch score before any heartbeat %v, want the enqueue plus the timeout %v", w, a.Enqueue.Add(hbTimeout))
		}
		before := contents(t, p, part)
		at := t0.Add(30 * time.Second)
		if ok, err := p.Heartbeat(ctx, part, "a", at, hbTimeout); err != nil || !ok {
			t.Fatalf("heartbeat = %v, %v", ok, err)
		}
		if w := watchOf(t, p, part, a); !w.Equal(at.Add(hbTimeout)) {
			t.Fatalf("watch score %v, want %v", w, at.Add(hbTimeout))
		}
		if h := hash(t, p, part, "a"); h["hb"] != msTime(at) || h["m"] != member(a) {
			t.Fatalf("hash %v, want hb %s", h, msTime(at))
		}
		// Only a's watch score moved: no member added, no other set touched.
		after := contents(t, p, part)
		for _, s := range []string{"pool", "enq"} {
			if !reflect.DeepEqual(before[s], after[s]) {
				t.Fatalf("heartbeat changed %s: %v → %v", s, before[s], after[s])
			}
		}
		only(t, p, part, "a", member(a))
		if w := watchOf(t, p, part, b); !w.Equal(b.Enqueue.Add(hbTimeout)) {
			t.Fatalf("b's watch score moved to %v", w)
		}
		// An older one is accepted and moves nothing back.
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(10*time.Second), hbTimeout); err != nil || !ok {
			t.Fatalf("older heartbeat = %v, %v", ok, err)
		}
		if w := watchOf(t, p, part, a); !w.Equal(at.Add(hbTimeout)) {
			t.Fatalf("watch score went back to %v", w)
		}
		if h := hash(t, p, part, "a"); h["hb"] != msTime(at) {
			t.Fatalf("hash heartbeat went back: %v", h)
		}

		// Refused once claimed: neither the hash nor the member the claim
		// left in watch changes.
		if res, err := p.Claim(ctx, part, 0, "m1", []matcher.Entry{a}); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(time.Minute), hbTimeout); err != nil || ok {
			t.Fatalf("heartbeat of a claimed ticket = %v, %v; want false", ok, err)
		}
		if h := hash(t, p, part, "a"); h["hb"] != msTime(at) || h["state"] != "claimed" {
			t.Fatalf("hash after a refused heartbeat %v", h)
		}
		claimedOnly(t, p, part, "a", member(a))
		if w := watchOf(t, p, part, a); !w.Equal(at.Add(hbTimeout)) {
			t.Fatalf("a refused heartbeat moved the claimed ticket's watch score to %v", w)
		}
	})

	t.Run("IDWithBar", func(t *testing.T) {
		const part = "mbar:eu"
		bad := entry("a|b", 1, 0, time.Hour)
		for name, err := range map[string]error{
			"enqueue": func() error { _, err := p.Enqueue(ctx, part, bad, hashTTL, hbTimeout); return err }(),
			"requeue": func() error {
				_, err := p.Requeue(ctx, part, []matcher.Entry{bad}, hashTTL, time.Time{}, hbTimeout)
				return err
			}(),
			"claim": func() error { _, err := p.Claim(ctx, part, 0, "m", []matcher.Entry{bad}); return err }(),
		} {
			if err == nil {
				t.Errorf("%s of ticket id %q: no error", name, bad.TicketID)
			}
		}
		// A bar-holding id without the fields would name another
		// ticket's member.
		other := entry("a", 1, 0, time.Hour)
		mustEnqueue(t, p, part, other)
		for name, err := range map[string]error{
			"remove entry": func() error {
				_, err := p.RemoveEntry(ctx, []string{part}, matcher.Entry{TicketID: member(other)})
				return err
			}(),
		} {
			if err == nil {
				t.Errorf("%s of ticket id %q: no error", name, bad.TicketID)
			}
		}
		if n, _ := p.Size(ctx, part); n != 1 {
			t.Fatalf("pool of %d, want only the other ticket", n)
		}
		if n := p.rdb.Exists(ctx, p.ticketKey(part, bad.TicketID)).Val(); n != 0 {
			t.Fatal("a ticket id with a bar got a hash")
		}
	})
}

// closestMembers parses only the members that can be among the n closest,
// and must pick what Closest picks among all of them: ties in skill at the
// cut (broken by wait order, then id) included.
func TestClosestMembersIsClosest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 2000 {
		size := 1 + rng.IntN(40)
		var members []any
		var all []matcher.Entry
		for i := range size {
			// Few distinct skills and enqueue times: ties everywhere.
			e := entry(fmt.Sprintf("t%02d", i), float64(rng.IntN(6))*0.5, time.Duration(rng.IntN(3))*time.Millisecond, time.Hour)
			members = append(members, member(e))
			all = append(all, e)
		}
		skill := float64(rng.IntN(7))*0.5 - 0.25*float64(rng.IntN(2))
		n := 1 + rng.IntN(10)
		got, err := closestMembers(members, skill, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := matcher.Closest(all, skill, n); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d, %d closest to %v: got %v, want %v", round, n, skill, ids(got), ids(want))
		}
	}
}

// member written into one buffer is the fields formatted apart and joined.
func TestMemberIsItsFieldsJoined(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	skills := []float64{0, -17.25, 1e21, -1e-9, math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}
	for i := range 500 {
		e := matcher.Entry{
			TicketID: fmt.Sprintf("t%d-%s", i, strings.Repeat("x", rng.IntN(120))),
			UserID:   strings.Repeat("u|", rng.IntN(60)),
			Skill:    rng.NormFloat64() * 1000, Activity: rng.Float64(), Estimated: rng.IntN(2) == 0,
			Enqueue: time.UnixMilli(rng.Int64N(4e12) - 1e12), Deadline: time.UnixMilli(rng.Int64N(4e12)),
		}
		if i < len(skills) {
			e.Skill, e.Activity = skills[i], skills[len(skills)-1-i]
		}
		est := "0"
		if e.Estimated {
			est = "1"
		}
		want := e.TicketID + "|" + score(e.Skill) + "|" + msTime(e.Enqueue) + "|" + msTime(e.Deadline) + "|" +
			est + "|" + score(e.Activity) + "|" + e.UserID
		if got := member(e); got != want {
			t.Fatalf("member = %q, want %q", got, want)
		}
	}
}
