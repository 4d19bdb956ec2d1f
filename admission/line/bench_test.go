package line

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/redistest"
)

// BenchmarkLine measures, on real Redis, a Take of 50 and a Rank in a line
// of 10k and of 1M waiters, and reports the Redis memory a waiter costs
// (used_memory of INFO memory before and after the load, over the
// waiters: the line, its presence and the place's key share). Each Take's
// 50 are acknowledged and 50 new waiters join the tail off the clock, so
// the line keeps its size; the clock steps a second a take, so the window
// never holds it back. Rank asks for users spread over the line's back
// half; Ranks1000 and Touch1000 ask for 1000 users spread over the whole
// line (a gateway's refresh and presence of 1000 sockets: one script call
// each); Idle1000 reads the 1000 longest unseen (the admitter's
// abandonment read).
//
// The 1M line takes a few seconds to load and ~220 MiB of Redis, so it
// runs only with MATCHGATE_BENCH_1M=1:
//
//	MATCHGATE_BENCH_1M=1 go test -run '^$' -bench 'Line/1M' -benchtime 20000x ./admission/line/
func BenchmarkLine(b *testing.B) {
	rdb := redistest.Real(b)
	prefix := redistest.Prefix(b)
	ctx := context.Background()
	for _, size := range []struct {
		name string
		n    int
	}{{"10k", 10_000}, {"1M", 1_000_000}} {
		var l *Redis
		var tok int64
		var next int64
		now := t0
		load := func(b *testing.B) {
			if l != nil {
				return
			}
			before := usedMemory(b, rdb)
			l = NewRedis(rdb, prefix+"-"+size.name)
			next = addWaiters(b, l, 0, size.n)
			per := float64(usedMemory(b, rdb)-before) / float64(size.n)
			b.Logf("%s waiters: %.0f bytes of Redis memory each", size.name, per)
			var err error
			if tok, err = l.AcquireLease(ctx, "bench", "adm", t0, 1000*time.Hour, 0); err != nil || tok == 0 {
				b.Fatalf("acquire = %d, %v", tok, err)
			}
		}
		b.Run(size.name+"/Take50", func(b *testing.B) {
			if size.n >= 1_000_000 && os.Getenv("MATCHGATE_BENCH_1M") != "1" {
				b.Skip("set MATCHGATE_BENCH_1M=1 to load a line of 1M waiters")
			}
			load(b)
			for b.Loop() {
				now = now.Add(time.Second)
				got, _, err := l.Take(ctx, "bench", tok, 50, 1000, now)
				if err != nil || len(got) != 50 {
					b.Fatalf("take = %d, %v", len(got), err)
				}
				b.StopTimer()
				if err := l.Ack(ctx, "bench", users(got)); err != nil {
					b.Fatal(err)
				}
				next = addWaiters(b, l, next, 50)
				b.StartTimer()
			}
		})
		b.Run(size.name+"/Rank", func(b *testing.B) {
			if size.n >= 1_000_000 && os.Getenv("MATCHGATE_BENCH_1M") != "1" {
				b.Skip("set MATCHGATE_BENCH_1M=1 to load a line of 1M waiters")
			}
			load(b)
			rng := rand.New(rand.NewPCG(1, 1))
			for b.Loop() {
				u := "u" + strconv.FormatInt(next-int64(rng.IntN(size.n/2)), 10)
				_, total, ok, err := l.Rank(ctx, "bench", u)
				if err != nil || !ok || total != int64(size.n) {
					b.Fatalf("rank of %s = %v %d, %v", u, ok, total, err)
				}
			}
		})
		spread := func(rng *rand.Rand) []string {
			ids := make([]string, 1000)
			for i := range ids {
				ids[i] = "u" + strconv.FormatInt(next-int64(rng.IntN(size.n)), 10)
			}
			return ids
		}
		b.Run(size.name+"/Ranks1000", func(b *testing.B) {
			if size.n >= 1_000_000 && os.Getenv("MATCHGATE_BENCH_1M") != "1" {
				b.Skip("set MATCHGATE_BENCH_1M=1 to load a line of 1M waiters")
			}
			load(b)
			rng := rand.New(rand.NewPCG(2, 2))
			for b.Loop() {
				b.StopTimer()
				ids := spread(rng)
				b.StartTimer()
				rs, _, err := l.Ranks(ctx, "bench", ids)
				if err != nil || len(rs) != len(ids) || !rs[0].OK || rs[0].Total != int64(size.n) {
					b.Fatalf("ranks = %d, %v", len(rs), err)
				}
			}
		})
		b.Run(size.name+"/Touch1000", func(b *testing.B) {
			if size.n >= 1_000_000 && os.Getenv("MATCHGATE_BENCH_1M") != "1" {
				b.Skip("set MATCHGATE_BENCH_1M=1 to load a line of 1M waiters")
			}
			load(b)
			rng := rand.New(rand.NewPCG(3, 3))
			for b.Loop() {
				b.StopTimer()
				ids := spread(rng)
				b.StartTimer()
				if err := l.Touch(ctx, "bench", ids, now); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(size.name+"/Idle1000", func(b *testing.B) {
			if size.n >= 1_000_000 && os.Getenv("MATCHGATE_BENCH_1M") != "1" {
				b.Skip("set MATCHGATE_BENCH_1M=1 to load a line of 1M waiters")
			}
			load(b)
			for b.Loop() {
				idle, err := l.Idle(ctx, "bench", now.Add(time.Millisecond), 1000)
				if err != nil || len(idle) != 1000 {
					b.Fatalf("idle = %d, %v", len(idle), err)
				}
			}
		})
	}
	b.Run("Ping", func(b *testing.B) {
		for b.Loop() {
			if err := rdb.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// addWaiters adds n waiters after seq from, "u<seq>", and returns the last
// seq.
func addWaiters(b *testing.B, l *Redis, from int64, n int) int64 {
	b.Helper()
	ps := make([]admission.Place, 0, min(n, 10_000))
	for i := range n {
		from++
		ps = append(ps, admission.Place{UserID: "u" + strconv.FormatInt(from, 10), Seq: from})
		if len(ps) == cap(ps) || i == n-1 {
			if err := l.Add(context.Background(), "bench", ps, t0); err != nil {
				b.Fatal(err)
			}
			ps = ps[:0]
		}
	}
	return from
}

func usedMemory(b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(fmt.Errorf("used_memory %q: %w", v, err))
			}
			return n
		}
	}
	b.Fatal("no used_memory in INFO memory")
	return 0
}
