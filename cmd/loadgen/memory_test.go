package main

import (
	"strings"
	"testing"
)

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tmatchgate\nVmPeak:\t  900 kB\nVmRSS:\t  123456 kB\nThreads:\t9\n"
	got, err := parseVmRSS([]byte(status))
	if err != nil || got != 123456*1024 {
		t.Fatalf("got %d %v", got, err)
	}
	if _, err := parseVmRSS([]byte("Name:\tx\n")); err == nil {
		t.Fatal("no VmRSS accepted")
	}
}

func TestScrapeGauges(t *testing.T) {
	text := `# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 10023
go_memstats_heap_inuse_bytes 1.2345e+08
go_gc_duration_seconds{quantile="0"} 1e-05
`
	g := scrapeGauges(strings.NewReader(text), "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes")
	if g["go_goroutines"] != 10023 || g["go_memstats_heap_inuse_bytes"] != 1.2345e8 || len(g) != 2 {
		t.Fatalf("%v", g)
	}
}

func TestMemoryReportPerSocket(t *testing.T) {
	m := memoryReport(Config{ServerPIDs: []int{7}}, memSample{rss: 100 << 20, goroutines: 20},
		memSample{rss: 100<<20 + 19_000*25*1024, goroutines: 19_020}, 19_000)
	if m.BytesPerSocket != 25*1024 || m.GoroutinesAfter-m.GoroutinesBefore != 19_000 {
		t.Fatalf("%+v", m)
	}
}
