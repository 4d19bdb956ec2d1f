package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// TestBatches: ScanMany and ClaimMany agree with the single calls they
// batch, against miniredis and a real Redis.
func TestBatches(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		p := New(rdb, prefix, WithClaimTTL(90*time.Second), WithClock(atT0))
		if err := p.Load(ctx); err != nil {
			t.Fatal(err)
		}

		t.Run("ConcurrentEnqueuesAreEachEnqueue", func(t *testing.T) {
			// A client of its own, to count the pipelines it sends.
			one, ok := rdb.(*redis.Client)
			if !ok {
				t.Skip("counts the pipelines of a one-node client")
			}
			pipelines := &pipelineCounter{}
			crdb := redis.NewClient(one.Options())
			defer crdb.Close()
			crdb.AddHook(pipelines)
			cp := New(crdb, prefix, WithClock(atT0))
			const n = 300
			es := make([]matcher.Entry, n)
			for i := range es {
				es[i] = entry(fmt.Sprint("c", i), float64(i%37), time.Duration(i)*time.Millisecond, time.Hour)
			}
			// Every entry twice at once, as a retried join: one is added, the
			// other finds the ticket there.
			var wg sync.WaitGroup
			added := make([]atomic.Int32, n)
			for w := range 32 {
				wg.Go(func() {
					for i := w; i < 2*n; i += 32 {
						k := i % n
						ok, err := cp.Enqueue(ctx, "conc:eu", es[k], hashTTL, hbTimeout)
						if err != nil {
							t.Error(err)
						}
						if ok {
							added[k].Add(1)
						}
					}
				})
			}
			wg.Wait()
			for i := range added {
				if got := added[i].Load(); got != 1 {
					t.Fatalf("entry %d added %d times, want once", i, got)
				}
			}
			mustEnqueue(t, p, "seq:eu", es...)
			ticketIDs := ids(es)
			if got, want := contents(t, p, "conc:eu", ticketIDs...), contents(t, p, "seq:eu", ticketIDs...); !reflect.DeepEqual(got, want) {
				t.Fatal("concurrent enqueues left another pool than the same enqueues one by one")
			}
			t.Logf("%d enqueues in %d pipelines", 2*n, pipelines.n.Load())
			if pipelines.n.Load() == 0 {
				t.Error("no enqueues shared a round trip")
			}
		})

		t.Run("EnqueueBatch", func(t *testing.T) {
			// One call per partition; a ticket listed twice is added once,
			// by its first listing.
			hb := entry("h", 4, 0, time.Hour)
			hb.Heartbeat = t0.Add(3 * time.Second)
			calls := []enqueueCall{}
			for _, c := range []struct {
				part string
				e    matcher.Entry
			}{
				{"eb1:eu", entry("a", 1, 0, time.Hour)}, {"eb2:eu", entry("b", 2, 0, time.Hour)},
				{"eb1:eu", entry("a", 9, time.Second, time.Hour)}, {"eb1:eu", hb},
			} {
				calls = append(calls, enqueueCall{partition: c.part, key: p.ticketKey(c.part, c.e.TicketID), args: p.enqueueArgs(c.e, hashTTL, hbTimeout)})
			}
			var added []bool
			for _, r := range p.enqueueBatch(ctx, calls) {
				if r.err != nil {
					t.Fatal(r.err)
				}
				added = append(added, r.added)
			}
			if want := []bool{true, true, false, true}; !reflect.DeepEqual(added, want) {
				t.Fatalf("added %v, want %v", added, want)
			}
			got, err := p.Oldest(ctx, "eb1:eu", 10)
			if err != nil {
				t.Fatal(err)
			}
			if want := scanned(entry("a", 1, 0, time.Hour), hb); !reflect.DeepEqual(got, want) {
				t.Fatalf("eb1 holds %+v, want %+v", got, want)
			}
			if h := hash(t, p, "eb1:eu", "h"); h["hb"] != msTime(hb.Heartbeat) {
				t.Fatalf("h's hash %v, want heartbeat %v", h, hb.Heartbeat)
			}
			if at := watchOf(t, p, "eb1:eu", hb); !at.Equal(hb.Heartbeat.Add(hbTimeout)) {
				t.Fatalf("h watched at %v, want its heartbeat plus the timeout %v", at, hb.Heartbeat.Add(hbTimeout))
			}
			if got := inSets(t, p, "eb2:eu", "b"); got != [3]bool{true, true, true} {
				t.Errorf("b in eb2's sets: %v", got)
			}
		})

		t.Run("ScanManyIsEachScan", func(t *testing.T) {
			const part = "many:eu"
			rng := rand.New(rand.NewPCG(7, 11))
			for i := range 300 {
				// Whole skills: many exact ties, the hard case for nearest.
				e := entry(fmt.Sprint("e", i), float64(rng.IntN(60)), time.Duration(rng.IntN(5000))*time.Millisecond, time.Duration(30+rng.IntN(60))*time.Second)
				mustEnqueue(t, p, part, e)
			}
			// Watched at the sooner of the deadline (30s..90s) and the
			// enqueue (0..5s) plus hbTimeout: both kinds are read.
			now, soon := t0.Add(time.Minute), t0.Add(32*time.Second)
			scans := []Scan{OldestScan(10), WatchScan(now, 20), WatchScan(soon, 15), OldestScan(0)}
			singles := []func() ([]matcher.Entry, error){
				func() ([]matcher.Entry, error) { return p.Oldest(ctx, part, 10) },
				func() ([]matcher.Entry, error) { return p.Watched(ctx, part, now, 20) },
				func() ([]matcher.Entry, error) { return p.Watched(ctx, part, soon, 15) },
				func() ([]matcher.Entry, error) { return nil, nil },
			}
			for _, x := range []float64{-5, 0, 12.5, 30, 31, 59, 80} {
				for _, n := range []int{1, 2, 7, 40} {
					scans = append(scans, NearestScan(x, n))
					singles = append(singles, func() ([]matcher.Entry, error) { return p.Nearest(ctx, part, x, n) })
				}
			}
			got, err := p.ScanMany(ctx, part, scans)
			if err != nil {
				t.Fatal(err)
			}
			for i, single := range singles {
				want, err := single()
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got[i], want) {
					t.Errorf("scan %d (%s): batched %v, single %v", i, scans[i].mode, ids(got[i]), ids(want))
				}
			}
			// Nearest returns n entries as close as the n closest by brute
			// force (which of several at an equal distance at the edge is
			// Redis's member order: see Nearest).
			all, err := p.Oldest(ctx, part, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range scans {
				if s.mode != "nearest" {
					continue
				}
				want := matcher.Closest(all, s.skill, s.n)
				if d, w := distances(got[i], s.skill), distances(want, s.skill); !reflect.DeepEqual(d, w) {
					t.Errorf("nearest %v n=%d: distances %v, want %v", s.skill, s.n, d, w)
				}
			}
			// Scans of one call that read the same entries each get every
			// field.
			again, err := p.ScanMany(ctx, part, []Scan{OldestScan(300), NearestScan(30, 300), OldestScan(300)})
			if err != nil {
				t.Fatal(err)
			}
			byID := func(es []matcher.Entry) map[string]matcher.Entry {
				m := map[string]matcher.Entry{}
				for _, e := range es {
					m[e.TicketID] = e
				}
				return m
			}
			if len(again[0]) != 300 || !reflect.DeepEqual(byID(again[0]), byID(again[1])) || !reflect.DeepEqual(again[0], again[2]) {
				t.Error("scans of one call reading the same entries disagree")
			}
			if _, err := p.ScanMany(ctx, part, []Scan{NearestScan(0, 2), {mode: "nearest", n: 2, skill: nan()}}); err == nil {
				t.Error("a NaN skill was scanned")
			}
		})

		t.Run("AnchorsScanIsOldestWithEachNearest", func(t *testing.T) {
			const part = "anch:eu"
			rng := rand.New(rand.NewPCG(3, 5))
			for i := range 120 {
				// Whole skills: ties, where the read must centre on each anchor.
				mustEnqueue(t, p, part, entry(fmt.Sprint("a", i), float64(rng.IntN(20)), time.Duration(rng.IntN(5000))*time.Millisecond, time.Hour))
			}
			check := func(t *testing.T, n, limit int) {
				t.Helper()
				near := [][]matcher.Entry{{}} // cleared by every read
				got, err := p.ScanMany(ctx, part, []Scan{WatchScan(t0, 5), AnchorsScan(n, limit, &near)})
				if err != nil {
					t.Fatal(err)
				}
				want, err := p.Oldest(ctx, part, n)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got[1], want) {
					t.Fatalf("n=%d: anchors %v, oldest %v", n, ids(got[1]), ids(want))
				}
				if len(want) < n {
					if near != nil {
						t.Fatalf("n=%d: the whole pool read, yet %d candidate lists", n, len(near))
					}
					return
				}
				if len(near) != len(want) {
					t.Fatalf("n=%d: %d candidate lists for %d anchors", n, len(near), len(want))
				}
				for i, a := range want {
					one, err := p.ScanMany(ctx, part, []Scan{NearestToScan(a, limit)})
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(near[i], one[0]) {
						t.Errorf("n=%d limit=%d anchor %s: read with it %v, alone %v", n, limit, a.TicketID, ids(near[i]), ids(one[0]))
					}
				}
			}
			for _, n := range []int{1, 10, 60, 120, 121, 500} {
				for _, limit := range []int{1, 4, 9} {
					check(t, n, limit)
				}
			}

			// Read after the claims of one call: the claimed are gone from
			// the anchors and from every candidate list.
			oldest, err := p.Oldest(ctx, part, 2)
			if err != nil {
				t.Fatal(err)
			}
			var near [][]matcher.Entry
			claims, read, err := p.ClaimMany(ctx, part, 0, []ClaimRequest{{MatchID: "m-anch", Entries: oldest}}, AnchorsScan(10, 120, &near))
			if err != nil || !claims[0].OK {
				t.Fatalf("claim %+v, %v", claims, err)
			}
			if len(read[0]) != 10 || len(near) != 10 {
				t.Fatalf("after the claims: %d anchors, %d candidate lists", len(read[0]), len(near))
			}
			for _, es := range append(near, read[0]) {
				for _, e := range es {
					if e.TicketID == oldest[0].TicketID || e.TicketID == oldest[1].TicketID {
						t.Fatalf("claimed %s read after its claim", e.TicketID)
					}
				}
			}

			// An anchor whose hash is gone is read whole from its member,
			// with its candidates: the scans do not read the hashes.
			first := read[0][0]
			withHash, err := p.ScanMany(ctx, part, []Scan{AnchorsScan(3, 4, &near)})
			if err != nil {
				t.Fatal(err)
			}
			nearWithHash := near
			if err := rdb.Del(ctx, p.ticketKey(part, first.TicketID)).Err(); err != nil {
				t.Fatal(err)
			}
			got, err := p.ScanMany(ctx, part, []Scan{AnchorsScan(3, 4, &near)})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, withHash) || !reflect.DeepEqual(near, nearWithHash) || got[0][0] != first || len(near[0]) != 4 {
				t.Fatalf("lost hash: anchors %v, candidates %v; with the hash %v, %v", got, near, withHash, nearWithHash)
			}

			// An anchor no longer in pool (a stray in enq, which the
			// reconciler removes) is read whole from enq, and reads no
			// candidates.
			m := member(first)
			poolScore, err := rdb.ZScore(ctx, p.Key(part, "pool"), m).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.ZRem(ctx, p.Key(part, "pool"), m).Err(); err != nil {
				t.Fatal(err)
			}
			got, err = p.ScanMany(ctx, part, []Scan{AnchorsScan(3, 4, &near)})
			if err != nil {
				t.Fatal(err)
			}
			if got[0][0] != first || len(near[0]) != 0 || len(near[1]) != 4 {
				t.Fatalf("stray: anchor %+v, candidates %d / %d", got[0][0], len(near[0]), len(near[1]))
			}

			// An anchor whose member is a bare ticket id (a layout without
			// the fields) comes without a user, for the caller to repair.
			if err := rdb.ZAdd(ctx, p.Key(part, "pool"), redis.Z{Score: poolScore, Member: m}).Err(); err != nil {
				t.Fatal(err)
			}
			for _, set := range []string{"pool", "enq"} {
				key := p.Key(part, set)
				sc, err := rdb.ZScore(ctx, key, m).Result()
				if err != nil {
					t.Fatal(err)
				}
				if err := rdb.ZRem(ctx, key, m).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.ZAdd(ctx, key, redis.Z{Score: sc, Member: first.TicketID}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			got, err = p.ScanMany(ctx, part, []Scan{AnchorsScan(3, 4, &near)})
			if err != nil {
				t.Fatal(err)
			}
			// (Among anchors enqueued in the same millisecond, the new member
			// may sort elsewhere.)
			found := false
			for i, a := range got[0] {
				switch {
				case a.TicketID == first.TicketID:
					found = true
					if a != (matcher.Entry{TicketID: first.TicketID}) || len(near[i]) != 0 {
						t.Fatalf("bare id: anchor %+v with %d candidates, want none", a, len(near[i]))
					}
				case len(near[i]) != 4:
					t.Fatalf("bare id: anchor %+v beside it read %d candidates", a, len(near[i]))
				}
			}
			if !found {
				t.Fatalf("bare id: anchors %v without %s", ids(got[0]), first.TicketID)
			}
		})

		t.Run("NearestToIsCentredOnTheAnchor", func(t *testing.T) {
			const part = "centred:eu"
			// A crowd of one skill between a few neighbours: ids in member
			// order are ids in rank order within the crowd.
			var crowd []matcher.Entry
			for i := range 200 {
				crowd = append(crowd, entry(fmt.Sprintf("t%03d", i), 50, time.Duration(i)*time.Millisecond, time.Hour))
			}
			mustEnqueue(t, p, part, crowd...)
			mustEnqueue(t, p, part, entry("low", 49, 0, time.Hour), entry("high", 51, 0, time.Hour))
			all, err := p.Oldest(ctx, part, 1000)
			if err != nil {
				t.Fatal(err)
			}
			const n = 8
			read := func(s Scan) []matcher.Entry {
				t.Helper()
				got, err := p.ScanMany(ctx, part, []Scan{s})
				if err != nil {
					t.Fatal(err)
				}
				return got[0]
			}
			within := func(es []matcher.Entry, lo, hi int) bool {
				for _, e := range es {
					if e.TicketID < fmt.Sprintf("t%03d", lo) || e.TicketID > fmt.Sprintf("t%03d", hi) {
						return false
					}
				}
				return true
			}
			for _, c := range []struct {
				anchor matcher.Entry
				lo, hi int // the crowd's ids the read may return
			}{
				{crowd[0], 0, n}, {crowd[100], 100 - n, 100 + n}, {crowd[199], 199 - n, 199},
			} {
				got := read(NearestToScan(c.anchor, n))
				if d, w := distances(got, 50), distances(matcher.Closest(all, 50, n), 50); !reflect.DeepEqual(d, w) {
					t.Errorf("around %s: distances %v, want %v", c.anchor.TicketID, d, w)
				}
				if !within(got, c.lo, c.hi) {
					t.Errorf("around %s read %v, want the crowd's t%03d..t%03d", c.anchor.TicketID, ids(got), c.lo, c.hi)
				}
			}
			// An anchor not in the pool, or not at the skill asked, reads
			// as NearestScan.
			plain := ids(read(NearestScan(50, n)))
			for _, a := range []matcher.Entry{entry("elsewhere", 50, 0, time.Hour), {TicketID: "t100", Skill: 50.5}} {
				want := plain
				if a.Skill != 50 {
					want = ids(read(NearestScan(a.Skill, n)))
				}
				if got := ids(read(NearestToScan(a, n))); !reflect.DeepEqual(got, want) {
					t.Errorf("around %+v read %v, want %v", a, got, want)
				}
			}
		})

		t.Run("ClaimManyIsEachClaim", func(t *testing.T) {
			const part = "claims:eu"
			es := byID(entry("a", 1, 0, time.Hour), entry("b", 2, 0, time.Hour),
				entry("c", 3, 0, time.Hour), entry("d", 4, 0, time.Hour), entry("e", 5, 0, time.Hour),
				entry("f", 6, 0, time.Hour), entry("g", 7, 0, time.Hour))
			mustEnqueue(t, p, part, pick(es, "a", "b", "c", "d", "e", "f", "g")...)
			if err := p.rdb.Set(ctx, p.FenceKey(part), 3, 0).Err(); err != nil {
				t.Fatal(err)
			}
			got, next, err := p.ClaimMany(ctx, part, 3, []ClaimRequest{
				{MatchID: "m1", Entries: pick(es, "a", "b")},
				{MatchID: "m2", Entries: pick(es, "b", "c")}, // b went to m1
				{MatchID: "m3", Entries: pick(es, "d", "e")},
				{MatchID: "m4", Entries: pick(es, "c", "gone")},
				{MatchID: "m5", Entries: pick(es, "f", "gone")},
				{MatchID: "m6", Entries: pick(es, "g", "f")}, // m5 took nothing
			}, OldestScan(10))
			if err != nil {
				t.Fatal(err)
			}
			// The scan after the claims sees the pool without the claimed.
			if len(next) != 1 || !reflect.DeepEqual(ids(next[0]), []string{"c"}) {
				t.Errorf("oldest after the claims = %v, want [c]", next)
			}
			none := []string{"", ""} // no names: one "" per claimed ticket
			want := []ClaimResult{{OK: true, Names: none}, {Missing: []string{"b"}}, {OK: true, Names: none}, {Missing: []string{"gone"}}, {Missing: []string{"gone"}}, {OK: true, Names: none}}
			for i, w := range want {
				if got[i].Err != nil || !reflect.DeepEqual(got[i].ClaimResult, w) {
					t.Errorf("claim %d = %+v, want %+v", i, got[i], w)
				}
			}
			for id, m := range map[string]string{"a": "m1", "b": "m1", "d": "m3", "e": "m3", "c": "", "f": "m6", "g": "m6"} {
				if h := hash(t, p, part, id); h["match"] != m {
					t.Errorf("ticket %s claimed by %q, want %q", id, h["match"], m)
				}
			}
			if got := inSets(t, p, part, "c"); got != [3]bool{true, true, true} {
				t.Errorf("unclaimed c left the pool: %v", got)
			}
			// A stale fence refuses every claim, and takes nothing.
			got, _, err = p.ClaimMany(ctx, part, 2, []ClaimRequest{{MatchID: "m5", Entries: pick(es, "c")}})
			if err != nil || !errors.Is(got[0].Err, ErrStaleFence) {
				t.Fatalf("stale claim = %+v, %v; want ErrStaleFence", got, err)
			}
			if _, _, err := p.ClaimMany(ctx, part, 3, []ClaimRequest{{MatchID: "m6", Entries: pick(es, "c", "c")}}); err == nil {
				t.Fatal("a claim listing a ticket twice was sent")
			}
		})
	})
}

// The batches load the scripts again when Redis has lost them.
func TestBatchScriptFallback(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Mini(t)
	p := New(rdb, "")
	mustEnqueue(t, p, "fb:eu", entry("a", 1, 0, time.Hour), entry("b", 2, 0, time.Hour))
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := p.ScanMany(ctx, "fb:eu", []Scan{OldestScan(5), NearestScan(1, 1)})
	if err != nil || len(got[0]) != 2 || len(got[1]) != 1 {
		t.Fatalf("scan after flush = %v, %v", got, err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	claims, _, err := p.ClaimMany(ctx, "fb:eu", 0, []ClaimRequest{{MatchID: "m", Entries: []matcher.Entry{entry("a", 1, 0, time.Hour), entry("b", 2, 0, time.Hour)}}})
	if err != nil || claims[0].Err != nil || !claims[0].OK {
		t.Fatalf("claim after flush = %+v, %v", claims, err)
	}
	// Enqueues sharing a pipeline: the batch of a group, sent by hand.
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var calls []enqueueCall
	for _, id := range []string{"x", "y", "z"} {
		calls = append(calls, enqueueCall{
			partition: "fb:eu",
			key:       p.ticketKey("fb:eu", id),
			args:      p.enqueueArgs(entry(id, 3, 0, time.Hour), hashTTL, hbTimeout),
		})
	}
	for i, r := range p.enqueueBatch(ctx, calls) {
		if r.err != nil || !r.added {
			t.Fatalf("enqueue %d after flush = %+v", i, r)
		}
	}
}

// pipelineCounter counts the pipelines a client sends.
type pipelineCounter struct{ n atomic.Int64 }

func (*pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (c *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

func nan() float64 { return math.NaN() }

func distances(es []matcher.Entry, skill float64) []float64 {
	out := make([]float64, len(es))
	for i, e := range es {
		out[i] = math.Abs(e.Skill - skill)
	}
	return out
}

// ClosestFunc selects what sorting every kept entry by distance, then
// enqueue time, then ticket id, and taking the first n gives: many skills
// tie, many enqueue times tie, and some entries are not kept.
func TestClosestFuncIsTheSortedPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	t0 := time.Unix(1_700_000_000, 0)
	for round := range 2000 {
		es := make([]matcher.Entry, rng.IntN(40))
		for i := range es {
			es[i] = matcher.Entry{
				TicketID: fmt.Sprintf("t%03d", rng.IntN(1000)),
				Skill:    float64(rng.IntN(12) * 10),
				Enqueue:  t0.Add(time.Duration(rng.IntN(4)) * time.Second),
			}
		}
		skill, n := float64(rng.IntN(130)), rng.IntN(8)
		keep := func(e matcher.Entry) bool { return e.TicketID[len(e.TicketID)-1] != '7' }
		var want []matcher.Entry
		for _, e := range es {
			if keep(e) {
				want = append(want, e)
			}
		}
		sort.SliceStable(want, func(i, j int) bool {
			di, dj := math.Abs(want[i].Skill-skill), math.Abs(want[j].Skill-skill)
			if di != dj {
				return di < dj
			}
			if !want[i].Enqueue.Equal(want[j].Enqueue) {
				return want[i].Enqueue.Before(want[j].Enqueue)
			}
			return want[i].TicketID < want[j].TicketID
		})
		want = want[:min(n, len(want))]
		got := matcher.ClosestFunc(es, skill, n, keep)
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("round %d: ClosestFunc(%v, %v, %d) = %v, want %v", round, es, skill, n, got, want)
		}
	}
}
