package pool

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// The scan benchmarks share one preloaded partition: loading 100k tickets for
// every b.N step would dominate the run. It is deleted in TestMain.
var big struct {
	once   sync.Once
	rdb    *redis.Client
	prefix string
	err    error
}

const (
	bigPart  = "bench:100k"
	bigSize  = 100_000
	bigSkill = 3000.0 // skills uniform in [0, bigSkill): ~33 players per point
)

func TestMain(m *testing.M) {
	code := m.Run()
	if big.rdb != nil {
		_ = redistest.DeletePrefix(context.Background(), big.rdb, big.prefix)
		_ = big.rdb.Close()
	}
	os.Exit(code)
}

// benchPool is a real-Redis pool with scripts loaded, cleaned up after b.
func benchPool(b *testing.B) *Pool {
	b.Helper()
	p := New(redistest.Real(b), redistest.Prefix(b))
	if err := p.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return p
}

// bigPool returns the shared pool of 100k waiting tickets.
func bigPool(b *testing.B) *Pool {
	b.Helper()
	redistest.Real(b) // skip (or fail on CI) like every other real-Redis test
	big.once.Do(func() {
		opts, err := redis.ParseURL(redistest.URL())
		if err != nil {
			big.err = err
			return
		}
		big.rdb = redis.NewClient(opts)
		// Not redistest.Prefix(b): that would tie the keys to the first
		// benchmark's cleanup.
		big.prefix = "mgtest-bench-" + strconv.FormatUint(rand.Uint64(), 16)
		p := New(big.rdb, big.prefix)
		if big.err = p.Load(context.Background()); big.err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		// No heartbeat timeout: watched at their deadlines.
		big.err = preload(p, bigPart, 0, bigSize, 0, func(i int) matcher.Entry {
			return matcher.Entry{
				TicketID: "b" + strconv.Itoa(i),
				UserID:   "u" + strconv.Itoa(i),
				Skill:    rng.Float64() * bigSkill,
				Activity: rng.Float64(),
				Enqueue:  t0.Add(time.Duration(i) * time.Millisecond),
				// Deadlines spread over 5 minutes past t0; 1/3 of them are due
				// at t0+100s.
				Deadline: t0.Add(time.Duration(rng.IntN(300_000)) * time.Millisecond),
			}
		})
	})
	if big.err != nil {
		b.Fatal(big.err)
	}
	return New(big.rdb, big.prefix)
}

// preload enqueues entries from..to-1 through a pipeline, 1000 at a time,
// with the heartbeat timeout given.
func preload(p *Pool, partition string, from, to int, timeout time.Duration, mk func(i int) matcher.Entry) error {
	ctx := context.Background()
	for lo := from; lo < to; lo += 1000 {
		pipe := p.rdb.Pipeline()
		for i := lo; i < min(lo+1000, to); i++ {
			e := mk(i)
			enqueueScript.EvalSha(ctx, pipe,
				append(p.setKeys(partition), p.ticketKey(partition, e.TicketID)),
				p.enqueueArgs(e, hashTTL, timeout)...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

func simple(i int) matcher.Entry {
	return entry("t"+strconv.Itoa(i), float64(i%3000), time.Duration(i)*time.Millisecond, time.Hour)
}

func BenchmarkEnqueue(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := p.Enqueue(ctx, "bench:eu", simple(i), hashTTL, hbTimeout); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkEnqueue_Retry(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	mustEnqueue(b, p, "bench:eu", simple(0))
	for b.Loop() {
		if _, err := p.Enqueue(ctx, "bench:eu", simple(0), hashTTL, hbTimeout); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClaim_K4(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	const k = 4
	if err := preload(p, "bench:eu", 0, b.N*k, hbTimeout, simple); err != nil {
		b.Fatal(err)
	}
	if err := p.rdb.Set(ctx, p.FenceKey("bench:eu"), 1, 0).Err(); err != nil {
		b.Fatal(err)
	}
	group := make([]matcher.Entry, k)
	b.ResetTimer()
	for i := range b.N {
		for j := range k {
			group[j] = simple(i*k + j)
		}
		res, err := p.Claim(ctx, "bench:eu", 1, "m"+strconv.Itoa(i), group)
		if err != nil || !res.OK {
			b.Fatalf("claim %+v %v", res, err)
		}
	}
}

func BenchmarkClaim_K4_Missing(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	if err := preload(p, "bench:eu", 0, 3, hbTimeout, simple); err != nil {
		b.Fatal(err)
	}
	group := []matcher.Entry{simple(0), simple(1), simple(2), entry("gone", 0, 0, time.Hour)}
	for b.Loop() {
		if res, err := p.Claim(ctx, "bench:eu", 0, "m", group); err != nil || res.OK {
			b.Fatalf("claim %+v %v", res, err)
		}
	}
}

func BenchmarkRemove(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	if err := preload(p, "bench:eu", 0, b.N, hbTimeout, simple); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if res, err := p.Remove(ctx, "bench:eu", "t"+strconv.Itoa(i)); err != nil || !res.Removed {
			b.Fatalf("remove %+v %v", res, err)
		}
	}
}

func BenchmarkRequeue_K4(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	es := []matcher.Entry{simple(0), simple(1), simple(2), simple(3)}
	for b.Loop() {
		b.StopTimer()
		if res, err := p.Claim(ctx, "bench:eu", 0, "m", es); err != nil || (!res.OK && len(res.Missing) != 4) {
			b.Fatalf("claim %+v %v", res, err)
		}
		b.StartTimer()
		if _, err := p.Requeue(ctx, "bench:eu", es, hashTTL, time.Time{}, hbTimeout); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeartbeat(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	mustEnqueue(b, p, "bench:eu", simple(0))
	at := t0
	for b.Loop() {
		at = at.Add(time.Millisecond)
		if ok, err := p.Heartbeat(ctx, "bench:eu", "t0", at, hbTimeout); err != nil || !ok {
			b.Fatalf("heartbeat %v %v", ok, err)
		}
	}
}

func benchScan(b *testing.B, want int, scan func(p *Pool, rng *rand.Rand) ([]matcher.Entry, error)) {
	p := bigPool(b)
	rng := rand.New(rand.NewPCG(3, 4))
	got := 0
	b.ResetTimer()
	for b.Loop() {
		es, err := scan(p, rng)
		if err != nil {
			b.Fatal(err)
		}
		got += len(es)
	}
	if avg := float64(got) / float64(b.N); want > 0 && avg < float64(want)*0.9 {
		b.Fatalf("scan returned %.1f entries on average, want ~%d", avg, want)
	}
	b.ReportMetric(float64(got)/float64(b.N), "entries/op")
}

func BenchmarkOldest_100k_n10(b *testing.B) {
	benchScan(b, 10, func(p *Pool, _ *rand.Rand) ([]matcher.Entry, error) {
		return p.Oldest(context.Background(), bigPart, 10)
	})
}

// BenchmarkWatched_100k_n10 reads the head of watch, a third of which is
// due at t0+100s (the big pool has no heartbeat timeout).
func BenchmarkWatched_100k_n10(b *testing.B) {
	benchScan(b, 10, func(p *Pool, _ *rand.Rand) ([]matcher.Entry, error) {
		return p.Watched(context.Background(), bigPart, t0.Add(100*time.Second), 10)
	})
}

// BenchmarkWindow_100k is the anchor scan: ±15 around a random skill holds
// ~1000 players, of which the first 100 come back.
func BenchmarkWindow_100k(b *testing.B) {
	benchScan(b, 100, func(p *Pool, rng *rand.Rand) ([]matcher.Entry, error) {
		x := 15 + rng.Float64()*(bigSkill-30)
		return p.Window(context.Background(), bigPart, x-15, x+15, 100)
	})
}

func BenchmarkWindow_100k_n1000(b *testing.B) {
	benchScan(b, 900, func(p *Pool, rng *rand.Rand) ([]matcher.Entry, error) {
		x := 15 + rng.Float64()*(bigSkill-30)
		return p.Window(context.Background(), bigPart, x-15, x+15, 1000)
	})
}

func BenchmarkNearest_100k_n8(b *testing.B) {
	benchScan(b, 8, func(p *Pool, rng *rand.Rand) ([]matcher.Entry, error) {
		return p.Nearest(context.Background(), bigPart, rng.Float64()*bigSkill, 8)
	})
}

func BenchmarkSize_100k(b *testing.B) {
	p := bigPool(b)
	for b.Loop() {
		if _, err := p.Size(context.Background(), bigPart); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMembers_100k(b *testing.B) {
	p := bigPool(b)
	for b.Loop() {
		ms, err := p.Members(context.Background(), bigPart)
		if err != nil || len(ms) < bigSize {
			b.Fatalf("members %d %v", len(ms), err)
		}
	}
}

// BenchmarkAnchors_100k_n160 is the read of a dense pass's fifth round: 160
// anchors and the 4 candidates of each (a pairs queue's scanLimit), in one
// call. Its entries/op counts the anchors and the candidates.
func BenchmarkAnchors_100k_n160(b *testing.B) {
	benchScan(b, 160*5, func(p *Pool, _ *rand.Rand) ([]matcher.Entry, error) {
		var near [][]matcher.Entry
		got, err := p.ScanMany(context.Background(), bigPart, []Scan{AnchorsScan(160, 4, &near)})
		if err != nil {
			return nil, err
		}
		es := got[0]
		for _, n := range near {
			es = append(es, n...)
		}
		return es, nil
	})
}

// BenchmarkWatchDrops_100k_n512 is what a claim of 512 tickets (a tick's
// worth at K = 2) costs later, in a watch set of 100k: the scan that meets
// their members at the head of watch drops them. Each op leaves 512 claimed
// members at the head (untimed), then times the one scan that drops them.
func BenchmarkWatchDrops_100k_n512(b *testing.B) {
	p := benchPool(b)
	ctx := context.Background()
	const part, n = "bench:drops", 512
	// The live tickets are watched from t0+30s on; the claimed ones, which
	// joined an hour earlier, before them.
	if err := preload(p, part, 0, bigSize, hbTimeout, simple); err != nil {
		b.Fatal(err)
	}
	next := bigSize
	for b.Loop() {
		b.StopTimer()
		group := make([]matcher.Entry, n)
		for j := range group {
			group[j] = entry("t"+strconv.Itoa(next), float64(next%3000), -time.Hour, time.Hour)
			next++
		}
		if err := preload(p, part, 0, n, hbTimeout, func(j int) matcher.Entry { return group[j] }); err != nil {
			b.Fatal(err)
		}
		if res, err := p.Claim(ctx, part, 0, "m"+strconv.Itoa(next), group); err != nil || !res.OK {
			b.Fatalf("claim %+v %v", res, err)
		}
		b.StartTimer()
		got, err := p.Watched(ctx, part, t0, n)
		if err != nil || len(got) != 0 {
			b.Fatalf("watched %d, %v; want none", len(got), err)
		}
	}
	b.StopTimer()
	if c := p.rdb.ZCard(ctx, p.Key(part, "watch")).Val(); c != bigSize {
		b.Fatalf("watch holds %d, want %d", c, bigSize)
	}
}
