package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// BenchmarkTick measures one matching pass (Engine.Tick) over a partition
// of 1k, 100k and 1M waiting players for K = 2, 4 and 10, on real Redis and
// the memory ledger, whose commit is part of the tick (PostgreSQL's is
// measured by the ledger's own benchmarks). redis-ms/op is the time a tick
// waits for Redis (its round trips, replies read); the rest of ns/op is the
// engine's own and the record's. Skills are uniform in [0, 3000) and every
// window is ±50, so every anchor fills a match and a pass reads on through
// the dense head up to its seat bound (128 matches of 2, 64 of 4, 25 of
// 10): it reads the watched tickets and the anchors with the ScanLimit
// players closest to each (4, 8 and 20 by default), then claims each
// round's groups with the next round's anchors, and commits them all. After
// each pass the matched players are replaced (off the clock), so the
// partition keeps its size.
//
// The 1M partition takes one to two minutes to load and ~1 GiB of Redis
// memory, so it runs only with MATCHGATE_BENCH_1M=1 (docs/OPERATIONS.md's
// `-bench .` stays short); select sizes with -bench, e.g.
//
//	go test -run '^$' -bench 'Tick/100k' ./matcher/
//	MATCHGATE_BENCH_1M=1 go test -run '^$' -bench 'Tick/1M' -benchtime 100x -timeout 30m ./matcher/
func BenchmarkTick(b *testing.B) {
	rdb := redistest.Real(b)
	calls := &callTimer{}
	rdb.AddHook(calls)
	prefix := redistest.Prefix(b)
	for _, size := range []struct {
		name string
		n    int
	}{{"1k", 1_000}, {"100k", 100_000}, {"1M", 1_000_000}} {
		var part *tickPartition
		for _, k := range []int{2, 4, 10} {
			b.Run(fmt.Sprintf("%s_K%d", size.name, k), func(b *testing.B) {
				if size.n >= 1_000_000 && os.Getenv("MATCHGATE_BENCH_1M") != "1" {
					b.Skip("set MATCHGATE_BENCH_1M=1 to load a partition of 1M players")
				}
				if part == nil {
					part = newTickPartition(b, pool.New(rdb, prefix+"-"+size.name), size.n)
					part.calls = calls
				}
				part.bench(b, k)
			})
		}
	}
}

// tickPartition is a loaded partition shared by the K variants of a size.
type tickPartition struct {
	pool  *pool.Pool
	led   *ledger.Memory
	svc   *engine.Service // joins at "now": refills
	now   time.Time
	users atomic.Int64
	rng   *rand.Rand
	calls *callTimer
}

// callTimer sums the round trips to Redis made while on is set, so that a
// tick's time splits into the time waiting for Redis and the engine's own.
type callTimer struct {
	on    atomic.Bool
	n, ns atomic.Int64
}

func (c *callTimer) reset() { c.n.Store(0); c.ns.Store(0) }

func (c *callTimer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return c.timed(func() error { return next(ctx, cmd) })
	}
}

func (c *callTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return c.timed(func() error { return next(ctx, cmds) })
	}
}

// timed makes one round trip, counted while on is set.
func (c *callTimer) timed(call func() error) error {
	if !c.on.Load() {
		return call()
	}
	start := time.Now()
	err := call()
	c.n.Add(1)
	c.ns.Add(int64(time.Since(start)))
	return err
}

const tickSkillRange = 3000.0

// tickQueue is the benchmark queue with K players; every variant uses the
// same name, hence the same partition.
func tickQueue(b testing.TB, k int) matcher.QueueConfig {
	b.Helper()
	cfg := matcher.Config{Queues: []matcher.QueueConfig{{
		Name:       "tick",
		Seats:      matcher.Seats{Players: k},
		SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 50}}}},
	}}}
	if err := cfg.Normalize(); err != nil {
		b.Fatal(err)
	}
	return cfg.Queues[0]
}

func newTickPartition(b *testing.B, pl *pool.Pool, n int) *tickPartition {
	b.Helper()
	ctx := context.Background()
	if err := pl.Load(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	t := &tickPartition{pool: pl, led: ledger.NewMemory(), now: t0.Add(15 * time.Second), rng: rand.New(rand.NewPCG(1, 2))}
	q := tickQueue(b, 2)
	// Preload: enqueue times spread over t0..t0+10s (wait order), so at
	// "now" = t0+15s nobody is stale (heartbeat timeout 30s) or due (5m).
	var clock atomic.Int64
	loader, err := engine.NewService(engine.ServiceConfig{
		Deps:   engine.Deps{Pool: pl, Ledger: t.led, Now: func() time.Time { return t0.Add(time.Duration(clock.Add(1)%10_000) * time.Millisecond) }},
		Queues: matcher.Config{Queues: []matcher.QueueConfig{q}},
	})
	if err != nil {
		b.Fatal(err)
	}
	t.svc, err = engine.NewService(engine.ServiceConfig{
		Deps:   engine.Deps{Pool: pl, Ledger: t.led, Now: func() time.Time { return t.now }},
		Queues: matcher.Config{Queues: []matcher.QueueConfig{q}},
	})
	if err != nil {
		b.Fatal(err)
	}
	skills := make([]float64, n)
	for i := range skills {
		skills[i] = t.rng.Float64() * tickSkillRange
	}
	t.users.Store(int64(n))
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				s := skills[i]
				if _, err := loader.Join(ctx, matcher.JoinRequest{UserID: "u" + strconv.Itoa(i), Queue: "tick", Skill: &s}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if got := t.size(b); got != int64(n) {
		b.Fatalf("loaded %d players, want %d", got, n)
	}
	b.Logf("loaded %d waiting players in %s", n, time.Since(start).Round(time.Millisecond))
	return t
}

func (t *tickPartition) size(b *testing.B) int64 {
	n, err := t.pool.Size(context.Background(), matcher.Partition{Queue: "tick", Region: "global"}.String())
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// refill joins n new players at "now".
func (t *tickPartition) refill(b *testing.B, n int) {
	for range n {
		s := t.rng.Float64() * tickSkillRange
		u := "u" + strconv.FormatInt(t.users.Add(1), 10)
		if _, err := t.svc.Join(context.Background(), matcher.JoinRequest{UserID: u, Queue: "tick", Skill: &s}); err != nil {
			b.Fatal(err)
		}
	}
}

func (t *tickPartition) bench(b *testing.B, k int) {
	e, err := engine.NewEngine(engine.EngineConfig{
		Deps:   engine.Deps{Pool: t.pool, Ledger: t.led, Now: func() time.Time { return t.now }},
		Queue:  tickQueue(b, k),
		Region: "global",
	})
	if err != nil {
		b.Fatal(err)
	}
	want := t.size(b)
	matches := 0
	t.calls.reset()
	b.ResetTimer()
	for b.Loop() {
		t.calls.on.Store(true)
		res, err := e.Tick(context.Background())
		t.calls.on.Store(false)
		if err != nil {
			b.Fatal(err)
		}
		matches += res.Matches
		b.StopTimer()
		t.refill(b, res.Players+res.Expired)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(matches)/float64(b.N), "matches/op")
	b.ReportMetric(float64(t.calls.n.Load())/float64(b.N), "redis-calls/op")
	b.ReportMetric(float64(t.calls.ns.Load())/1e6/float64(b.N), "redis-ms/op")
	if got := t.size(b); got != want {
		b.Fatalf("partition drifted from %d to %d players", want, got)
	}
}
