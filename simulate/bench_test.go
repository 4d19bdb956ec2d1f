package simulate

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSimulatePairs runs a short stream at 300 joins/s through a pairs
// queue and reports joins simulated per second of real time.
func BenchmarkSimulatePairs(b *testing.B) {
	sc, err := ReadScenario("testdata/windows.yaml")
	if err != nil {
		b.Fatal(err)
	}
	sc.Arrivals.Rate = 300
	sc.Duration = 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("SIMULATE_BENCH_DURATION")); err == nil {
		sc.Duration = d
	}
	sc.Configs = sc.Configs[1:] // loose
	if k, err := strconv.Atoi(os.Getenv("SIMULATE_BENCH_PLAYERS")); err == nil {
		q := &sc.Configs[0].Queue
		q.Players, q.MinPlayers, q.ScanLimit = k, k, max(4, 2*k)
	}
	if os.Getenv("SIMULATE_BENCH_WAKE") == "off" {
		sc.Wake = Wake{Off: true}
	}
	var joins int64
	start := time.Now()
	for range b.N {
		var opt Options
		if path := os.Getenv("SIMULATE_BENCH_HEAP"); path != "" {
			// The heap at the end of the stream, while the run holds it.
			opt.Progress = func(p Progress) {
				if p.Done {
					writeHeap(b, path)
				}
			}
		}
		rep, err := Run(context.Background(), sc, opt)
		if err != nil {
			b.Fatal(err)
		}
		joins += rep.Configs[0].Joins
	}
	b.ReportMetric(float64(joins)/time.Since(start).Seconds(), "joins/s")
}

func writeHeap(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
