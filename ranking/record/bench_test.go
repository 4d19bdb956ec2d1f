package record_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/ranking"
	"github.com/matchgate/matchgate/ranking/record"
)

// BenchmarkIngest_Postgres: b.N batches of distinct events into one board,
// spread over 1,000 items and two metrics, each batch durable before its
// Ingest returns. Batch500: a bulk poster's batches, alone in their
// transactions; Batch10_Callers64: many callers of a few events each,
// group-committed.
func BenchmarkIngest_Postgres(b *testing.B) {
	for _, c := range []struct{ size, callers int }{{500, 4}, {10, 64}} {
		b.Run(fmt.Sprintf("Batch%d_Callers%d", c.size, c.callers), func(b *testing.B) {
			benchmarkIngest(b, record.NewPostgres(pgtest.New(b)), c.size, c.callers)
		})
	}
}

func BenchmarkIngest_Memory_Batch10_Callers64(b *testing.B) {
	benchmarkIngest(b, record.NewMemory(), 10, 64)
}

func benchmarkIngest(b *testing.B, r ranking.Record, size, callers int) {
	ctx := context.Background()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for range callers {
		wg.Go(func() {
			batch := make([]ranking.Event, size)
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				for i := range batch {
					k := int(n)*size + i
					batch[i] = ranking.Event{ID: fmt.Sprint("e", k), Item: fmt.Sprint("item", k%1000),
						Metric: []string{"joins", "matches"}[k%2], Value: 1, At: t0.Add(time.Duration(k%3600) * time.Second)}
				}
				if _, _, err := r.Ingest(ctx, "bench", batch); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkScan_Postgres_100kItems_Week: a week's Scan of a board of
// 100,000 items, each with a bucket a day in two metrics (1.4 million
// buckets), loaded straight into the table.
func BenchmarkScan_Postgres_100kItems_Week(b *testing.B) {
	pool := pgtest.New(b)
	ctx := context.Background()
	const items = 100_000
	if _, err := pool.Exec(ctx, `INSERT INTO ranking_buckets (board, item, metric, hour, value, first_at)
		SELECT 'bench', 'item' || lpad(i::text, 6, '0'), m, $1::timestamptz + make_interval(days => d, hours => i % 24),
		       i % 100 + d, $1::timestamptz + make_interval(days => d, hours => i % 24, mins => i % 60)
		  FROM generate_series(1, $2) AS i, generate_series(0, 6) AS d, unnest(ARRAY['joins', 'matches']) AS m`,
		h0, items); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE ranking_buckets`); err != nil {
		b.Fatal(err)
	}
	r := record.NewPostgres(pool)
	b.ResetTimer()
	for b.Loop() {
		var n int
		if err := r.Scan(ctx, "bench", h0, h0.Add(7*24*time.Hour), func(ranking.ItemMetrics) error {
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != items {
			b.Fatalf("scanned %d items, want %d", n, items)
		}
	}
	b.ReportMetric(float64(items*b.N)/b.Elapsed().Seconds(), "items/s")
}
