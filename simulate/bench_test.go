package simulate

import (
	"context"
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
	sc.Configs = sc.Configs[1:] // loose
	var joins int64
	start := time.Now()
	for range b.N {
		rep, err := Run(context.Background(), sc, Options{})
		if err != nil {
			b.Fatal(err)
		}
		joins += rep.Configs[0].Joins
	}
	b.ReportMetric(float64(joins)/time.Since(start).Seconds(), "joins/s")
}
