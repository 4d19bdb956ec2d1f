package admission_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
	"github.com/matchgate/matchgate/internal/redistest"
)

// Entries in flight together share the line's calls (enterbatch.go), and
// each is still told its own rank: never more than its place in the
// record's order (an entry recorded ahead of it may reach the line a batch
// later), and once all are in, exactly that place. On the memory line and
// on Redis (real and embedded).
func TestConcurrentEntriesAreToldTheirOwnRank(t *testing.T) {
	const n = 400
	check := func(t *testing.T, ln admission.Line) {
		q := admission.Queue{Name: "launch", Rate: 50, AbandonAfter: time.Hour}
		rec := record.NewMemory()
		svc, err := admission.NewService(admission.ServiceConfig{Queues: []admission.Queue{q}, Record: rec, Line: ln})
		if err != nil {
			t.Fatal(err)
		}
		ranks := make([]int64, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				pos, created, err := svc.Enter(context.Background(), q.Name, fmt.Sprint("u", i))
				switch {
				case err != nil:
					errs <- err
				case !created || pos.Status != admission.StatusWaiting || pos.Total < pos.Rank+1:
					errs <- fmt.Errorf("u%d: %+v created %v", i, pos, created)
				}
				ranks[i] = pos.Rank
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		seqs := make([]int64, n)
		for i := range n {
			p, err := rec.Place(context.Background(), q.Name, fmt.Sprint("u", i))
			if err != nil {
				t.Fatal(err)
			}
			seqs[i] = p.Seq
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return seqs[idx[a]] < seqs[idx[b]] })
		for want, i := range idx {
			pos, err := svc.Position(context.Background(), q.Name, fmt.Sprint("u", i))
			if err != nil || pos.Rank != int64(want) || pos.Total != n {
				t.Fatalf("u%d (seq %d) at %+v, %v; want rank %d of %d: the record's order", i, seqs[i], pos, err, want, n)
			}
			if ranks[i] > int64(want) {
				t.Fatalf("u%d (seq %d) was told rank %d at entry, behind its place %d", i, seqs[i], ranks[i], want)
			}
		}
	}
	t.Run("memory", func(t *testing.T) { check(t, line.NewMemory()) })
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		check(t, line.NewRedis(rdb, prefix))
	})
}

// slowAdds holds every Add until released, so that the entries behind the
// first ones pile up.
type slowAdds struct {
	admission.Line
	release chan struct{}
	adds    atomic.Int64
}

func (s *slowAdds) Add(ctx context.Context, queue string, places []admission.Place, now time.Time) error {
	s.adds.Add(1)
	<-s.release
	return s.Line.Add(ctx, queue, places, now)
}

func TestEntriesInFlightShareTheLinesCalls(t *testing.T) {
	const n = 200
	ln := &slowAdds{Line: line.NewMemory(), release: make(chan struct{})}
	q := admission.Queue{Name: "launch", Rate: 50, AbandonAfter: time.Hour}
	svc, err := admission.NewService(admission.ServiceConfig{Queues: []admission.Queue{q}, Record: record.NewMemory(), Line: ln})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, _, err := svc.Enter(context.Background(), q.Name, fmt.Sprint("u", i)); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // the first batches wait in Add, the rest behind them
	close(ln.release)
	wg.Wait()
	if got := ln.adds.Load(); got > n/4 {
		t.Fatalf("%d entries made %d Add calls: they were not batched", n, got)
	}
	t.Logf("%d entries, %d Add calls", n, ln.adds.Load())
}
