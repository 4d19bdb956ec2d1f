package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// memSample is the servers' memory at one instant, summed over processes.
type memSample struct {
	rss        int64   // VmRSS of --server-pid, bytes
	goroutines float64 // from /metrics
	heap       float64 // go_memstats_heap_inuse_bytes
	stack      float64 // go_memstats_stack_inuse_bytes
}

// vmRSS reads VmRSS (bytes) from /proc/<pid>/status.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmRSS(b)
}

func parseVmRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS line")
}

// scrapeGauges reads the named unlabeled samples of a Prometheus text
// exposition.
func scrapeGauges(r io.Reader, names ...string) map[string]float64 {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || !want[f[0]] {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}

// sampleMemory reads every pid's RSS and every metrics URL's Go gauges.
func sampleMemory(ctx context.Context, cfg Config) (memSample, error) {
	var s memSample
	for _, pid := range cfg.ServerPIDs {
		rss, err := vmRSS(pid)
		if err != nil {
			return s, fmt.Errorf("server pid %d: %w", pid, err)
		}
		s.rss += rss
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, u := range cfg.MetricsURL {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		g := scrapeGauges(resp.Body, "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes")
		resp.Body.Close()
		s.goroutines += g["go_goroutines"]
		s.heap += g["go_memstats_heap_inuse_bytes"]
		s.stack += g["go_memstats_stack_inuse_bytes"]
	}
	return s, nil
}

// memoryReport compares two samples over the sockets held.
func memoryReport(cfg Config, before, after memSample, sockets int64) *MemoryReport {
	m := &MemoryReport{
		PIDs: cfg.ServerPIDs, RSSBefore: before.rss, RSSAfter: after.rss, Sockets: sockets,
		GoroutinesBefore: before.goroutines, GoroutinesAfter: after.goroutines,
		HeapBefore: before.heap, HeapAfter: after.heap, StackBefore: before.stack, StackAfter: after.stack,
	}
	if sockets > 0 {
		m.BytesPerSocket = float64(after.rss-before.rss) / float64(sockets)
	}
	return m
}
