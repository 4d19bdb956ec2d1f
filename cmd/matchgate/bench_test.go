package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
)

// BenchmarkJoinToMatchFound_Pair measures, through the whole server and real
// WebSockets, the time from a pair's second join to both players holding
// match.found. It reports the median and p99 over b.N pairs. With
// MATCHGATE_BENCH_REDIS_URL and MATCHGATE_BENCH_POSTGRES_URL set it runs
// against real Redis and PostgreSQL instead of the embedded default.
//
//	go test -run '^$' -bench JoinToMatchFound -benchtime 100x ./cmd/matchgate
func BenchmarkJoinToMatchFound_Pair(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	args := []string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--guests", "true", "--log-level", "error"}
	if u := os.Getenv("MATCHGATE_BENCH_REDIS_URL"); u != "" {
		prefix := fmt.Sprintf("mgbench%d", time.Now().UnixNano())
		args = append(args, "--redis-url", u, "--redis-prefix", prefix)
		// Fences and statistics have no TTL: the run's keys go with it.
		// Cleanups run after the function, hence after the server stopped.
		b.Cleanup(func() {
			opts, err := redis.ParseURL(u)
			if err != nil {
				b.Error(err)
				return
			}
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			if err := redistest.DeletePrefix(context.Background(), rdb, prefix); err != nil {
				b.Errorf("delete the run's keys: %v", err)
			}
		})
	}
	if u := os.Getenv("MATCHGATE_BENCH_POSTGRES_URL"); u != "" {
		args = append(args, "--postgres-url", u)
	}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, func(string) string { return "" }, io.Discard, io.Discard, func(a net.Addr) { addrs <- a })
	}()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case err := <-done:
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ca := dial(b, base, newGuest(b, base, 1500))
		cb := dial(b, base, newGuest(b, base, 1500))
		ca.expect("hello", 5*time.Second)
		cb.expect("hello", 5*time.Second)
		ca.send(map[string]any{"type": "join", "id": "a", "queue": "duel"})
		ca.expect("joined", 5*time.Second)
		b.StartTimer()
		start := time.Now()
		cb.send(map[string]any{"type": "join", "id": "b", "queue": "duel"})
		ca.expect("match.found", 5*time.Second)
		cb.expect("match.found", 5*time.Second)
		lat = append(lat, time.Since(start))
		b.StopTimer()
		ca.conn.CloseNow()
		cb.conn.CloseNow()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	cancel()
	<-done
}
