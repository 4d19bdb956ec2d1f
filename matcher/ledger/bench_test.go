package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// The hot path of the matcher: one commit per formed match of two players.
// Sequential is one partition's matcher loop; Parallel8 is eight partitions
// committing at once (group commit shares the WAL flushes).

func BenchmarkCommitMatch_Postgres_K2(b *testing.B) {
	benchmarkCommitMatch(b, ledger.NewPostgres(pgtest.New(b)), 2, 0)
}

func BenchmarkCommitMatch_Postgres_K2_Parallel8(b *testing.B) {
	benchmarkCommitMatch(b, ledger.NewPostgres(pgtest.New(b)), 2, 8)
}

func BenchmarkCommitMatch_Memory_K2(b *testing.B) {
	benchmarkCommitMatch(b, ledger.NewMemory(), 2, 0)
}

// benchmarkCommitMatch commits b.N matches of k fresh tickets each, from
// `workers` goroutines (0: the benchmark's own goroutine).
func benchmarkCommitMatch(b *testing.B, l matcher.Ledger, k, workers int) {
	ctx := context.Background()
	matches := make([]matcher.Match, b.N)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 { // setup, not measured
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				seats := make([]matcher.Ticket, k)
				for j := range seats {
					seats[j] = mustCreate(b, l, ticketFor(fmt.Sprintf("b%d-%d", i, j), "ranked", "eu", t0))
				}
				matches[i] = matchOf(t0.Add(time.Second), seats...)
			}
		})
	}
	wg.Wait()

	b.ResetTimer()
	if workers == 0 {
		for i := range b.N {
			if _, err := commitMatch(ctx, l, matches[i], 0); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		next.Store(0)
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
					if _, err := commitMatch(ctx, l, matches[i], 0); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkCommitMatches_Postgres_K2 commits pair matches in batches of
// one, two and ten, as matching passes of a quiet, a steady and a busy
// partition do: one round trip and one log flush per batch.
func BenchmarkCommitMatches_Postgres_K2(b *testing.B) {
	for _, per := range []int{1, 2, 10} {
		b.Run(fmt.Sprintf("batch=%d", per), func(b *testing.B) {
			l := ledger.NewPostgres(pgtest.New(b))
			ctx := context.Background()
			matches := make([]matcher.Match, b.N)
			for i := range matches { // setup, not measured
				a := mustCreate(b, l, ticketFor(fmt.Sprintf("b%d-a", i), "ranked", "eu", t0))
				c := mustCreate(b, l, ticketFor(fmt.Sprintf("b%d-b", i), "ranked", "eu", t0))
				matches[i] = matchOf(t0.Add(time.Second), a, c)
			}
			b.ResetTimer()
			for lo := 0; lo < b.N; lo += per {
				rs, err := l.CommitMatches(ctx, matches[lo:min(lo+per, b.N)], 0)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range rs {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// BenchmarkCreateTicket_Postgres_Parallel64: 64 joins in flight at once, as
// a busy gateway has them; the group commit writes them in shared batches.
func BenchmarkCreateTicket_Postgres_Parallel64(b *testing.B) {
	l := ledger.NewPostgres(pgtest.New(b))
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(32) // × GOMAXPROCS (2 here) goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.CreateTicket(ctx, ticketFor(fmt.Sprint("j", next.Add(1)), "ranked", "eu", t0)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "joins/s")
}
