package pool

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
)

// BenchmarkSnapshot1000 reads a queue of 1,000 online providers, each
// holding two of its four slots, in one script call (real Redis only).
func BenchmarkSnapshot1000(b *testing.B) {
	rdb := redistest.Real(b)
	l := NewRedis(rdb, redistest.Prefix(b), WithClock(func() time.Time { return t0 }))
	ctx := context.Background()
	const q, n = "bench", 1000
	for i := range n {
		user := fmt.Sprintf("u%04d", i)
		if _, err := l.Online(ctx, q, prov(user, 4, attrsA), "s", t0.Add(time.Hour)); err != nil {
			b.Fatalf("online: %v", err)
		}
		for k := range 2 {
			if ok, err := l.Hold(ctx, q, user, fmt.Sprintf("%s-a%d", user, k), t0); err != nil || !ok {
				b.Fatalf("hold = %v, %v", ok, err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		snap, err := l.Snapshot(ctx, q, t0)
		if err != nil || len(snap) != n {
			b.Fatalf("snapshot = %d, %v", len(snap), err)
		}
	}
}
