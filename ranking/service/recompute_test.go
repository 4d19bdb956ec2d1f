package service

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/record"
)

// TestRecomputeFigures measures what new weights cost on a large board
// (BENCHMARKS.md §8): MATCHGATE_RANKING_RECOMPUTE=N items, each with
// MATCHGATE_RANKING_HOURS (default 3) hourly buckets of two metrics at
// random hours of the week before now, loaded into PostgreSQL; then the
// week's Top N recomputed under new weights, one refresh of every window,
// and SetWeights (every retained period) — each timed, with the heap's
// peak, and the Redis memory of the board's keys. Off by default: a
// million items take minutes to load.
func TestRecomputeFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MATCHGATE_RANKING_RECOMPUTE"))
	if n <= 0 {
		t.Skip("set MATCHGATE_RANKING_RECOMPUTE=items to measure the recompute")
	}
	hours := 3
	if h, err := strconv.Atoi(os.Getenv("MATCHGATE_RANKING_HOURS")); err == nil && h > 0 {
		hours = h
	}
	ctx := context.Background()
	pool := pgtest.New(t)
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	now := time.Now().UTC()
	metrics := map[string]ranking.Metric{"views": {Weight: 1}, "sales": {Weight: 5, Transform: ranking.TransformLog1p}}
	b := ranking.Board{Name: "big", Source: ranking.SourceEvents, Metrics: metrics, Top: 100,
		Carry: ranking.Carry{Top: 100, Fraction: 0.1}, Refresh: time.Minute}
	if err := b.Normalize(); err != nil {
		t.Fatal(err)
	}

	// Load: COPY of the buckets, as the record would hold them.
	start := time.Now()
	weekStart := now.Truncate(time.Hour).Add(-167 * time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([][]any, 0, 1<<16)
	var loaded int64
	flush := func() {
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"ranking_buckets"},
			[]string{"board", "item", "metric", "hour", "value", "first_at"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
		loaded += int64(len(rows))
		rows = rows[:0]
	}
	for i := range n {
		item := fmt.Sprintf("item-%07d", i)
		picked := map[int]bool{}
		for range hours {
			h := rng.IntN(168)
			if picked[h] {
				continue
			}
			picked[h] = true
			hour := weekStart.Add(time.Duration(h) * time.Hour)
			first := hour.Add(time.Duration(rng.IntN(3600)) * time.Second)
			rows = append(rows, []any{b.Name, item, "views", hour, float64(1 + rng.IntN(1000)), first},
				[]any{b.Name, item, "sales", hour, float64(rng.IntN(20)), first})
		}
		if len(rows) >= 1<<16-2*hours {
			flush()
		}
	}
	flush()
	if _, err := pool.Exec(ctx, "ANALYZE ranking_buckets"); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d items, %d buckets in %s", n, loaded, time.Since(start).Round(time.Millisecond))

	clk := newClock(now)
	s, err := New(Config{Boards: []ranking.Board{b}, Record: record.NewPostgres(pool), Redis: rdb, Prefix: prefix, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	measure := func(what string, fn func() error) {
		t.Helper()
		runtime.GC()
		debug.FreeOSMemory()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tk := time.NewTicker(10 * time.Millisecond)
			defer tk.Stop()
			for {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-tk.C:
				}
			}
		})
		start := time.Now()
		err := fn()
		took := time.Since(start)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%-44s %8s, heap in use peak %6.1f MiB above %6.1f MiB", what, took.Round(time.Millisecond),
			float64(peak.Load()-min(peak.Load(), base.HeapInuse))/(1<<20), float64(base.HeapInuse)/(1<<20))
	}
	week := ranking.PeriodOf(ranking.WindowWeek, now)
	measure("the week's Top 100, from the record", func() error {
		_, _, err := s.refresh(ctx, b, week, now, false, 0, nil)
		return err
	})
	measure("first refresh (every window, the carry chain)", func() error { return s.Tick(ctx) })
	clk.add(b.Refresh)
	measure("the next refresh, a minute later", func() error { return s.Tick(ctx) })
	newWeights := map[string]ranking.Metric{"views": {Weight: 2}, "sales": {Weight: 1, Transform: ranking.TransformLog1p}}
	measure("new weights: every retained period re-scored", func() error {
		_, err := s.SetWeights(ctx, b.Name, newWeights, "bench")
		return err
	})
	var keys, bytes int64
	iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		keys++
		m, err := rdb.MemoryUsage(ctx, iter.Val()).Result()
		if err == nil {
			bytes += m
		}
	}
	t.Logf("Redis: %d keys of the board, %.1f KiB (MEMORY USAGE), for %d items", keys, float64(bytes)/1024, n)
	if rss := peakRSS(); rss > 0 {
		t.Logf("process peak RSS (VmHWM) %.1f MiB", float64(rss)/(1<<20))
	}
}

// peakRSS is the process's VmHWM in bytes, 0 if unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
