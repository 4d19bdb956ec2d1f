package record_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/record"
	"github.com/matchgate/matchgate/internal/pgtest"
)

// BenchmarkEnter_Postgres_Parallel64: 64 entries in flight at once, as a
// busy gateway has them when a drop opens; the group commit writes them in
// shared batches, each durable before its Enter returns.
func BenchmarkEnter_Postgres_Parallel64(b *testing.B) {
	benchmarkEnter(b, record.NewPostgres(pgtest.New(b)), 64)
}

func BenchmarkEnter_Memory_Parallel64(b *testing.B) {
	benchmarkEnter(b, record.NewMemory(), 64)
}

// benchmarkEnter makes b.N entries of distinct users into one queue from
// exactly `callers` goroutines.
func benchmarkEnter(b *testing.B, r admission.Record, callers int) {
	ctx := context.Background()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for range callers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if _, _, err := r.Enter(ctx, "drop", fmt.Sprint("u", i), t0, t0); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "enters/s")
}
