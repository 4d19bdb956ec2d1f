package main

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// BenchmarkServeUnderLoad is not a micro-benchmark: it runs the whole
// server in the test process for a fixed time so that `go test`'s
// -cpuprofile can profile it while cmd/loadgen drives it from outside (the
// server exposes no pprof endpoint). It runs only when
// MATCHGATE_PROFILE_ARGS holds the serve flags:
//
//	MATCHGATE_PROFILE_ARGS='--addr 127.0.0.1:39200 --secret … --redis-url … --postgres-url …' \
//	MATCHGATE_PROFILE_SECONDS=60 MATCHGATE_PROFILE_HEAP=/tmp/heap.pprof MATCHGATE_PROFILE_HEAP_AT=40 \
//	go test -run '^$' -bench ServeUnderLoad -benchtime 1x -cpuprofile /tmp/cpu.pprof ./cmd/matchgate
//
// MATCHGATE_PROFILE_HEAP, when set, receives a heap profile (after a GC)
// MATCHGATE_PROFILE_HEAP_AT seconds in: the memory of the sockets then held.
// Profile with `go tool pprof cmd/matchgate/matchgate.test /tmp/cpu.pprof`.
func BenchmarkServeUnderLoad(b *testing.B) {
	args := strings.Fields(os.Getenv("MATCHGATE_PROFILE_ARGS"))
	if len(args) == 0 {
		b.Skip("set MATCHGATE_PROFILE_ARGS (and MATCHGATE_PROFILE_SECONDS) to profile the server under an external load")
	}
	secs, err := time.ParseDuration(os.Getenv("MATCHGATE_PROFILE_SECONDS") + "s")
	if err != nil || secs <= 0 {
		b.Fatal("MATCHGATE_PROFILE_SECONDS must be a positive number of seconds")
	}
	ctx, cancel := context.WithTimeout(context.Background(), secs)
	defer cancel()
	if path := os.Getenv("MATCHGATE_PROFILE_HEAP"); path != "" {
		at, err := time.ParseDuration(os.Getenv("MATCHGATE_PROFILE_HEAP_AT") + "s")
		if err != nil {
			b.Fatal("MATCHGATE_PROFILE_HEAP_AT must be a number of seconds")
		}
		t := time.AfterFunc(at, func() {
			runtime.GC()
			f, err := os.Create(path)
			if err != nil {
				b.Error(err)
				return
			}
			defer f.Close()
			if err := pprof.WriteHeapProfile(f); err != nil {
				b.Error(err)
			}
		})
		defer t.Stop()
	}
	for b.Loop() {
		if err := run(ctx, append([]string{"serve"}, args...), os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
			b.Fatal(err)
		}
	}
}
